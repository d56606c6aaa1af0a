//! Turning operands into slots: registers by name, immediates and symbol addresses into
//! pre-filled constant slots, special registers into per-thread slots filled at launch.

use crate::error::Error;
use crate::program::{MemRef, Slot, Space, W};
use ptx_parser::{Address, AddressBase, Immediate, Operand, SpecialReg, SpecialScalar};
use std::collections::HashMap;

/// How an immediate is to be read for the instruction using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int(W),
    F32,
    F64,
}

/// What a symbol names in a kernel's address spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symbol {
    Param {
        offset: u32,
        bytes: u32,
    },
    Shared {
        offset: u32,
    },
    Local {
        offset: u32,
    },
    Const {
        offset: u32,
    },
    /// A module-level `.global` variable: its address is known only at launch.
    Global,
}

/// Where a device function's parameters and return values live.
#[derive(Debug, Clone, Default)]
pub(crate) struct CalleeParams {
    pub params: Vec<(u32, u32)>,
    pub returns: Vec<(u32, u32)>,
}

/// Per-kernel decoding state.
pub(crate) struct Frame {
    pub kernel: String,
    /// The instruction being decoded, as text, for errors.
    pub text: String,
    pub opcode: String,
    /// The module's `.file` table.
    pub files: super::source_lines::Files,
    pub regs: HashMap<String, Slot>,
    pub next: u32,
    consts: HashMap<u64, Slot>,
    pub constants: Vec<(Slot, u64)>,
    specials: HashMap<SpecialReg, Slot>,
    pub special_list: Vec<(Slot, SpecialReg)>,
    sink: Option<Slot>,
    pub symbols: HashMap<String, Symbol>,
    /// Labels by scoped name.
    pub labels: HashMap<String, u32>,
    /// Prefix of the function being gathered or decoded (`""` for the entry), so each device
    /// function has its own registers and labels.
    pub scope: String,
    /// The device function being decoded (`""` for the entry).
    pub function: String,
    /// First instruction of each device function.
    pub functions: HashMap<String, u32>,
    /// `bar.red` reductions, indexed by `Op::Bar::red`.
    pub bar_reds: Vec<crate::program::BarRed>,
    /// Per-thread local variables: offset and size.
    pub local_vars: HashMap<String, (u32, u32)>,
    /// Each device function's parameters and return values as (offset, size) in local memory.
    pub callee_params: HashMap<String, CalleeParams>,
    /// Slots that receive a module `.global` variable's address at launch.
    pub links: Vec<(Slot, String)>,
    link_slots: HashMap<String, Slot>,
    /// `cp.async.bulk.tensor` operands, indexed by `Op::TensorCopy`.
    pub tensor_copies: Vec<crate::program::TensorCopy>,
    pub tensor_stores: Vec<crate::program::TensorStore>,
}

impl Frame {
    pub(crate) fn new(kernel: &str) -> Frame {
        Frame {
            kernel: kernel.to_string(),
            text: String::new(),
            opcode: String::new(),
            files: Default::default(),
            regs: HashMap::new(),
            next: 0,
            consts: HashMap::new(),
            constants: Vec::new(),
            specials: HashMap::new(),
            special_list: Vec::new(),
            sink: None,
            symbols: HashMap::new(),
            labels: HashMap::new(),
            scope: String::new(),
            function: String::new(),
            functions: HashMap::new(),
            local_vars: HashMap::new(),
            bar_reds: Vec::new(),
            callee_params: HashMap::new(),
            links: Vec::new(),
            link_slots: HashMap::new(),
            tensor_copies: Vec::new(),
            tensor_stores: Vec::new(),
        }
    }

    pub(crate) fn unsupported(&self, detail: impl Into<String>) -> Error {
        let detail = detail.into();
        Error::Unsupported {
            kernel: self.kernel.clone(),
            opcode: self.opcode.clone(),
            instruction: self.text.clone(),
            detail: if detail.is_empty() {
                detail
            } else {
                format!(" ({detail})")
            },
        }
    }

    pub(crate) fn malformed(&self, detail: impl Into<String>) -> Error {
        Error::Malformed {
            kernel: self.kernel.clone(),
            instruction: self.text.clone(),
            detail: detail.into(),
        }
    }

    pub(crate) fn declare(&mut self, name: &str) {
        let scoped = format!("{}{name}", self.scope);
        if !self.regs.contains_key(&scoped) {
            self.regs.insert(scoped, self.next);
            self.next += 1;
        }
    }

    /// The slot of register `name` in the current scope, if declared.
    pub(crate) fn lookup(&self, name: &str) -> Option<Slot> {
        if self.scope.is_empty() {
            return self.regs.get(name).copied();
        }
        self.regs.get(&format!("{}{name}", self.scope)).copied()
    }

    /// Offset and size of a per-thread local variable.
    pub(crate) fn local_var(&self, name: &str) -> Option<(u32, u32)> {
        self.local_vars.get(name).copied()
    }

    /// The instruction index of `label` in the current scope.
    pub(crate) fn label(&self, name: &str) -> Option<u32> {
        self.labels.get(&format!("{}{name}", self.scope)).copied()
    }

    /// A slot that holds `value` in every thread.
    pub(crate) fn konst(&mut self, value: u64) -> Slot {
        if let Some(&s) = self.consts.get(&value) {
            return s;
        }
        let s = self.next;
        self.next += 1;
        self.consts.insert(value, s);
        self.constants.push((s, value));
        s
    }

    /// A scratch slot writes to `_` go to.
    pub(crate) fn sink(&mut self) -> Slot {
        if let Some(s) = self.sink {
            return s;
        }
        let s = self.next;
        self.next += 1;
        self.sink = Some(s);
        s
    }

    fn special(&mut self, reg: SpecialReg) -> Result<Slot, Error> {
        if matches!(
            reg,
            SpecialReg::Scalar(
                SpecialScalar::Clock
                    | SpecialScalar::ClockHi
                    | SpecialScalar::Clock64
                    | SpecialScalar::Globaltimer
                    | SpecialScalar::GlobaltimerLo
                    | SpecialScalar::GlobaltimerHi
            )
        ) {
            return Err(self.unsupported(format!("`{reg}` can only be read with `mov`")));
        }
        if let Some(&s) = self.specials.get(&reg) {
            return Ok(s);
        }
        let s = self.next;
        self.next += 1;
        self.specials.insert(reg, s);
        self.special_list.push((s, reg));
        Ok(s)
    }

    /// The slot holding the address of module variable `name`, filled at launch.
    fn link(&mut self, name: &str) -> Slot {
        if let Some(&s) = self.link_slots.get(name) {
            return s;
        }
        let s = self.next;
        self.next += 1;
        self.link_slots.insert(name.to_string(), s);
        self.links.push((s, name.to_string()));
        s
    }

    pub(crate) fn reg(&self, name: &str) -> Result<Slot, Error> {
        self.lookup(name)
            .ok_or_else(|| self.malformed(format!("register `{name}` is not declared")))
    }

    /// A source operand of `kind`.
    pub(crate) fn src(&mut self, op: &Operand, kind: Kind) -> Result<Slot, Error> {
        match op {
            Operand::Reg(name) => self.reg(name),
            Operand::Special(reg) => self.special(*reg),
            Operand::Imm(imm) => {
                let bits = self.imm_bits(imm, kind)?;
                Ok(self.konst(bits))
            }
            Operand::Symbol(name) => {
                if let Some(s) = self.lookup(name) {
                    return Ok(s);
                }
                if self.symbols.get(name) == Some(&Symbol::Global) {
                    return Ok(self.link(name));
                }
                let addr = self.symbol_address(name)?;
                Ok(self.konst(addr))
            }
            other => {
                Err(self.malformed(format!("expected a register or immediate, found {other:?}")))
            }
        }
    }

    /// The address `mov d, sym` gives: the symbol's address in its own state space.
    pub(crate) fn symbol_address(&self, name: &str) -> Result<u64, Error> {
        match self.symbols.get(name) {
            Some(Symbol::Shared { offset }) => Ok(*offset as u64),
            Some(Symbol::Local { offset }) => Ok(*offset as u64),
            Some(Symbol::Const { offset }) => Ok(*offset as u64),
            Some(Symbol::Param { offset, .. }) => Ok(*offset as u64),
            Some(Symbol::Global) => Err(self.malformed(format!("`{name}` is a global variable"))),
            None => Err(self.unsupported(format!(
                "symbol `{name}` (functions and undeclared symbols are not emulated)"
            ))),
        }
    }

    pub(crate) fn dst(&mut self, op: &Operand) -> Result<Slot, Error> {
        match op {
            Operand::Reg(name) => self.reg(name),
            Operand::Symbol(name) if self.lookup(name).is_some() => self.reg(name),
            Operand::Sink => Ok(self.sink()),
            other => {
                Err(self.malformed(format!("expected a destination register, found {other:?}")))
            }
        }
    }

    /// A predicate source, possibly written `!%p`.
    pub(crate) fn pred(&mut self, op: &Operand) -> Result<(Slot, bool), Error> {
        match op {
            Operand::Not(inner) => Ok((self.src(inner, Kind::Int(W::B32))?, true)),
            Operand::Imm(_) => Ok((self.src(op, Kind::Int(W::B32))?, false)),
            other => Ok((self.src(other, Kind::Int(W::B32))?, false)),
        }
    }

    pub(crate) fn imm_bits(&self, imm: &Immediate, kind: Kind) -> Result<u64, Error> {
        Ok(match (kind, *imm) {
            (Kind::Int(w), Immediate::Int(i)) => i.bits() & w.mask(),
            (Kind::Int(w), Immediate::F32(b)) => b as u64 & w.mask(),
            (Kind::Int(w), Immediate::F64(b)) => b & w.mask(),
            (Kind::Int(_), Immediate::Float(v)) => {
                return Err(self.malformed(format!("float literal {v} in an integer instruction")))
            }
            (Kind::F32, Immediate::Int(i)) => (i.as_i64() as f32).to_bits() as u64,
            (Kind::F32, Immediate::F32(b)) => b as u64,
            (Kind::F32, Immediate::F64(b)) => (f64::from_bits(b) as f32).to_bits() as u64,
            (Kind::F32, Immediate::Float(v)) => (v as f32).to_bits() as u64,
            (Kind::F64, Immediate::Int(i)) => (i.as_i64() as f64).to_bits(),
            (Kind::F64, Immediate::F32(b)) => (f32::from_bits(b) as f64).to_bits(),
            (Kind::F64, Immediate::F64(b)) => b,
            (Kind::F64, Immediate::Float(v)) => v.to_bits(),
        })
    }

    /// A memory operand in `space`. Parameter addresses are handled by the caller.
    pub(crate) fn address(&mut self, op: &Operand, space: Space) -> Result<MemRef, Error> {
        let Operand::Address(Address { base, offset }) = op else {
            return Err(self.malformed(format!("expected an address `[...]`, found {op:?}")));
        };
        let offset = offset.unwrap_or(0);
        let base = match base {
            AddressBase::Reg(name) => self.reg(name)?,
            AddressBase::Imm(i) => self.konst(i.bits()),
            AddressBase::Symbol(name) => {
                if let Some(s) = self.lookup(name) {
                    s
                } else if self.symbols.get(name) == Some(&Symbol::Global) {
                    self.link(name)
                } else {
                    let (sym_space, addr) = match self.symbols.get(name) {
                        Some(Symbol::Shared { offset }) => (Space::Shared, *offset as u64),
                        Some(Symbol::Local { offset }) => (Space::Local, *offset as u64),
                        Some(Symbol::Const { offset }) => (Space::Const, *offset as u64),
                        _ => {
                            return Err(self.unsupported(format!(
                                "address of symbol `{name}` in this state space"
                            )))
                        }
                    };
                    // A variable named in a generic access is addressed through its window.
                    let addr = if space == Space::Generic {
                        crate::exec::spaces::to_generic(sym_space, addr)
                    } else {
                        addr
                    };
                    self.konst(addr)
                }
            }
        };
        Ok(MemRef {
            space,
            base,
            offset,
        })
    }
}
