//! Type-checks a kernel's Rust body and lowers it to kernel-dsl IR through the builder's raw
//! layer. Checking and lowering are one pass: each expression lowers to a typed [`Value`], and
//! a type error stops the pass at the offending tokens.
//!
//! Lets initialised from an unsuffixed literal (`let mut i = 0;`) take their type from their
//! first use against a typed value, as Rust infers it: the first pass records the type that use
//! needs and lowering restarts with it (a handful of passes at most, each microseconds).

mod calls;
pub(crate) use calls::MATH_UNARY;
mod casts;
mod chain;
mod cluster;
mod expr;
mod hopper;
mod location;
mod methods;
mod operators;
mod places;
mod stmt;
mod tuples;
pub mod value;
mod vector;

use crate::diag::{err, DResult, Diag};
use crate::dsl_type::{self, ParamTy};
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::ir::{AddrBase, Imm, Kernel, Operand, ParamType, Reg};
use kernel_dsl::op::{Cmp, Op};
use kernel_dsl::{ScalarType, StateSpace};
use std::collections::{BTreeMap, HashMap};
use value::{Binding, Scalar, SliceRef, Value};

/// The compile-time context of one instance: what each generic parameter stands for.
#[derive(Clone, Debug, Default)]
pub struct Specialization {
    pub types: BTreeMap<String, ScalarType>,
    /// Const parameters: value and declared type.
    pub consts: BTreeMap<String, (i64, ScalarType)>,
    /// Op type parameters (`O: UnaryOp`): the type each stands for, whose `#[device] impl`
    /// methods `O::method(..)` calls.
    pub ops: BTreeMap<String, String>,
}

/// `#[device]` helpers visible to the kernel, by name.
pub type Devices = BTreeMap<String, syn::ItemFn>;

/// A lowered kernel plus the source span of every instruction, in push order, so that a
/// capability error names the line that asked for the instruction.
pub struct Lowered {
    pub kernel: Kernel,
    pub op_spans: Vec<(Op, crate::diag::SpanRange)>,
}

/// Signals that a flexible `let` learned its type and lowering must restart.
const RETRY: &str = "\u{0}retry";

pub struct Lowerer<'a> {
    pub(crate) b: KernelBuilder,
    scopes: Vec<HashMap<String, Binding>>,
    pub(crate) spec: &'a Specialization,
    devices: &'a Devices,
    pub(crate) op_spans: Vec<(Op, crate::diag::SpanRange)>,
    pub(crate) span: crate::diag::SpanRange,
    hints: &'a mut BTreeMap<usize, ScalarType>,
    lets: usize,
    /// Symbols taken by parameters and shared arrays.
    symbols: std::collections::BTreeSet<String>,
    /// The name the `let` being lowered binds (shared arrays are named after it).
    pub(crate) let_name: Option<String>,
    /// Device functions being inlined, innermost last (recursion is an error).
    inlining: Vec<String>,
    /// Whether instructions record their source locations (see `line_info.rs`).
    records_lines: bool,
    /// The source map's inline site of each function in `inlining`, where it has one.
    sites: Vec<Option<u32>>,
    /// Where a device function's `return` jumps: (result register, loop depth marker).
    pub(crate) returns: Vec<Option<Reg>>,
    /// bf16 registers that hold `cvt.rn.bf16.f32` of an f32 register, with the builder region
    /// they were set in: a vector store packs two such halves with one `cvt.rn.bf16x2.f32`.
    pub(crate) narrowed: HashMap<Reg, (Reg, u64)>,
}

/// Lowers one instance of a kernel.
pub fn lower_kernel(
    func: &syn::ItemFn,
    entry: &str,
    spec: &Specialization,
    block: Option<[u32; 3]>,
    devices: &Devices,
) -> DResult<Lowered> {
    let mut hints = BTreeMap::new();
    for _ in 0..32 {
        match lower_once(func, entry, spec, block, devices, &mut hints) {
            Err(d) if d.message == RETRY => continue,
            other => return other,
        }
    }
    err(
        crate::diag::range(&func.sig.ident),
        "type inference did not settle: annotate the `let` bindings initialised from literals",
    )
}

fn lower_once(
    func: &syn::ItemFn,
    entry: &str,
    spec: &Specialization,
    block: Option<[u32; 3]>,
    devices: &Devices,
    hints: &mut BTreeMap<usize, ScalarType>,
) -> DResult<Lowered> {
    let mut l = Lowerer {
        b: KernelBuilder::new(entry),
        scopes: vec![HashMap::new()],
        spec,
        devices,
        op_spans: Vec::new(),
        span: crate::diag::range(&func.sig.ident),
        hints,
        lets: 0,
        symbols: Default::default(),
        let_name: None,
        inlining: Vec::new(),
        records_lines: crate::line_info::Mode::current().records_lines(),
        sites: Vec::new(),
        returns: Vec::new(),
        narrowed: HashMap::new(),
    };
    if let Some(shape) = block {
        l.b.reqntid(shape);
    }
    if let syn::ReturnType::Type(_, ty) = &func.sig.output {
        return err(
            crate::diag::range(&ty),
            "a kernel returns nothing: write results through a `&mut [T]` parameter",
        );
    }
    if let Some(a) = &func.sig.asyncness {
        return err(crate::diag::range(&a), "a kernel cannot be `async`");
    }
    for input in &func.sig.inputs {
        l.param(input)?;
    }
    l.block_stmts(&func.block.stmts)?;
    Ok(Lowered {
        kernel: l.b.finish(),
        op_spans: l.op_spans,
    })
}

impl<'a> Lowerer<'a> {
    fn param(&mut self, input: &syn::FnArg) -> DResult<()> {
        let syn::FnArg::Typed(pt) = input else {
            return err(
                crate::diag::range(&input),
                "a kernel is a free function: it cannot take `self`",
            );
        };
        let syn::Pat::Ident(pi) = &*pt.pat else {
            return err(
                crate::diag::range(&pt.pat),
                "kernel parameters must be plain names",
            );
        };
        let name = pi.ident.to_string();
        self.symbols.insert(name.clone());
        self.span = crate::diag::range(&pt);
        match dsl_type::param_type(&pt.ty, &self.spec.types)? {
            ParamTy::Scalar(ty) => {
                // A `bool` travels as a 32-bit 0/1, the width every launcher and driver
                // passes without padding questions.
                let declared = if ty == ScalarType::Pred {
                    ScalarType::U32
                } else {
                    ty
                };
                let sym = self.b.raw_param(&name, ParamType::Scalar(declared));
                let addr = Operand::Addr {
                    base: AddrBase::Symbol(sym),
                    offset: 0,
                };
                let value = if ty == ScalarType::Pred {
                    let word = self.b.reg(ScalarType::U32);
                    self.inst(
                        Op::Ld {
                            space: StateSpace::Param,
                            ty: ScalarType::U32,
                            vec: None,
                            nc: false,
                            cache: None,
                        },
                        vec![word.into()],
                        vec![addr],
                    );
                    let p = self.b.reg(ScalarType::Pred);
                    self.inst(
                        Op::Setp {
                            cmp: Cmp::Ne,
                            ty: ScalarType::U32,
                            ftz: false,
                        },
                        vec![p.into()],
                        vec![word.into(), Operand::Imm(Imm::Int(0))],
                    );
                    p
                } else {
                    let r = self.b.reg(ty);
                    let pty = kernel_dsl::emit::param_type(ty);
                    self.inst(
                        Op::Ld {
                            space: StateSpace::Param,
                            ty: pty,
                            vec: None,
                            nc: false,
                            cache: None,
                        },
                        vec![r.into()],
                        vec![addr],
                    );
                    r
                };
                let mutable = pi.mutability.is_some();
                let value = if mutable {
                    let v = self.b.reg(ty);
                    self.mov(v, Scalar::reg(value));
                    v
                } else {
                    value
                };
                self.bind(
                    &name,
                    Binding {
                        value: Value::Scalar(Scalar::reg(value)),
                        mutable,
                        flex: None,
                    },
                );
            }
            ParamTy::TensorMap { elem, rank } => {
                let sym = self.b.raw_param(&name, ParamType::TensorMap);
                let param = self.b.reg(ScalarType::U64);
                self.inst(
                    Op::Mov {
                        ty: ScalarType::U64,
                    },
                    vec![param.into()],
                    vec![Operand::Symbol(sym)],
                );
                // The copy engine takes a generic address; `mov` gives the parameter-space
                // one. The map stays in the parameter space: a copy elsewhere would need a
                // proxy fence before the copy engine could read it.
                let addr = self.b.reg(ScalarType::U64);
                self.inst(
                    Op::Cvta {
                        space: StateSpace::Param,
                        to_generic: true,
                    },
                    vec![addr.into()],
                    vec![param.into()],
                );
                self.bind(
                    &name,
                    Binding {
                        value: Value::TensorMap { addr, elem, rank },
                        mutable: false,
                        flex: None,
                    },
                );
            }
            ParamTy::Slice { elem, mutable } => {
                let sym = self
                    .b
                    .raw_param(&name, ParamType::GlobalPtr { elem, mutable });
                let generic = self.b.reg(ScalarType::U64);
                self.inst(
                    Op::Ld {
                        space: StateSpace::Param,
                        ty: ScalarType::U64,
                        vec: None,
                        nc: false,
                        cache: None,
                    },
                    vec![generic.into()],
                    vec![Operand::Addr {
                        base: AddrBase::Symbol(sym),
                        offset: 0,
                    }],
                );
                let base = self.b.reg(ScalarType::U64);
                self.inst(
                    Op::Cvta {
                        space: StateSpace::Global,
                        to_generic: false,
                    },
                    vec![base.into()],
                    vec![generic.into()],
                );
                let slice = SliceRef {
                    name: name.clone(),
                    base,
                    elem,
                    mutable,
                };
                self.bind(
                    &name,
                    Binding {
                        value: Value::Slice(slice),
                        mutable: false,
                        flex: None,
                    },
                );
            }
        }
        Ok(())
    }

    // ----- scopes ------------------------------------------------------------------------

    /// A register array's elements copied into registers of its own, so that writes through
    /// one leave the other alone.
    pub(crate) fn copied_array(&mut self, elems: &[Reg], elem: ScalarType) -> Value {
        let elems = elems
            .iter()
            .map(|r| {
                let c = self.b.reg(elem);
                self.mov(c, value::Scalar::reg(*r));
                c
            })
            .collect();
        Value::Array { elems, elem }
    }

    pub(crate) fn bind(&mut self, name: &str, binding: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), binding);
        }
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    pub(crate) fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    pub(crate) fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// A fresh index for a `let`, and the type an earlier pass learned for it.
    pub(crate) fn next_let(&mut self) -> (usize, Option<ScalarType>) {
        let id = self.lets;
        self.lets += 1;
        (id, self.hints.get(&id).copied())
    }

    /// Records the type a flexible `let` must have and restarts lowering.
    pub(crate) fn learn(&mut self, flex: usize, ty: ScalarType) -> Diag {
        self.hints.insert(flex, ty);
        Diag::new(self.span, RETRY)
    }

    /// A shared symbol named after its binding; a number is added only on a clash.
    pub(crate) fn fresh_shared_name(&mut self, hint: &str) -> String {
        let mut name = hint.to_string();
        let mut k = 1;
        while self.symbols.contains(&name) {
            k += 1;
            name = format!("{hint}_{k}");
        }
        self.symbols.insert(name.clone());
        name
    }

    pub(crate) fn device(&self, name: &str) -> Option<&'a syn::ItemFn> {
        self.devices.get(name)
    }

    pub(crate) fn enter_device(&mut self, name: &str, span: crate::diag::SpanRange) -> DResult<()> {
        if self.inlining.iter().any(|n| n == name) {
            return err(
                span,
                format!(
                    "`{name}` calls itself: device functions are inlined, so they cannot recurse"
                ),
            );
        }
        self.inlining.push(name.to_string());
        let site = match self.records_lines {
            true => {
                let parent = self.sites.last().copied().flatten();
                location::locate(self.b.source_map(), span, parent)
                    .map(|call| self.b.source_map().site(name, call))
            }
            false => None,
        };
        self.sites.push(site);
        Ok(())
    }

    pub(crate) fn leave_device(&mut self) {
        self.inlining.pop();
        self.sites.pop();
    }

    /// Gives the instructions pushed next the location of the tokens being lowered.
    pub(crate) fn mark_loc(&mut self) {
        if self.records_lines {
            let site = self.sites.last().copied().flatten();
            let loc = location::locate(self.b.source_map(), self.span, site);
            self.b.set_loc(loc);
        }
    }

    /// Runs `f` in a fresh scope that sees only globals (for inlined device functions).
    pub(crate) fn isolated<T>(&mut self, f: impl FnOnce(&mut Self) -> DResult<T>) -> DResult<T> {
        let saved = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        let out = f(self);
        self.scopes = saved;
        out
    }

    /// Whether `r` is the register of a mutable variable or of an element of a mutable array
    /// in scope, so that a later assignment can change what it holds.
    pub(crate) fn is_mutable_place(&self, r: Reg) -> bool {
        self.scopes.iter().flat_map(|s| s.values()).any(|b| {
            b.mutable
                && match &b.value {
                    Value::Scalar(s) => s.op == Operand::Reg(r),
                    Value::Array { elems, .. } => elems.contains(&r),
                    _ => false,
                }
        })
    }

    // ----- instructions ------------------------------------------------------------------

    /// Appends an instruction, remembering the span it came from.
    pub(crate) fn inst(&mut self, op: Op, dsts: Vec<Operand>, srcs: Vec<Operand>) {
        if !self.narrowed.is_empty() {
            for d in &dsts {
                self.forget_narrowed(d);
            }
        }
        self.op_spans.push((op, self.span));
        self.mark_loc();
        self.b.inst(op, dsts, srcs);
    }

    /// A register written again no longer holds (or feeds) a narrowing it recorded.
    fn forget_narrowed(&mut self, written: &Operand) {
        match written {
            Operand::Reg(r) => {
                self.narrowed.remove(r);
                self.narrowed.retain(|_, (src, _)| src != r);
            }
            Operand::Vector(parts) => parts.iter().for_each(|p| self.forget_narrowed(p)),
            _ => {}
        }
    }

    /// The f32 register `r` is the bf16 narrowing of, if that holds here (same straight-line
    /// region, neither written since).
    pub(crate) fn narrowed_from(&self, r: Reg) -> Option<Reg> {
        match self.narrowed.get(&r) {
            Some(&(src, region)) if region == self.b.region() => Some(src),
            _ => None,
        }
    }

    /// `dst = src`, with the move type PTX wants for the value's type.
    pub(crate) fn mov(&mut self, dst: Reg, src: Scalar) {
        let src = match src.op {
            Operand::Imm(_) if matches!(dst.ty, ScalarType::F16 | ScalarType::Bf16) => {
                Scalar::reg(self.materialize(&src))
            }
            _ => src,
        };
        let carried = match src.op {
            Operand::Reg(r) => self.narrowed_from(r),
            _ => None,
        };
        self.inst(
            Op::Mov {
                ty: mov_type(dst.ty),
            },
            vec![dst.into()],
            vec![src.op],
        );
        if let Some(f) = carried {
            self.narrowed.insert(dst, (f, self.b.region()));
        }
    }

    /// A register holding `s` (immediates are moved into a fresh one).
    pub(crate) fn materialize(&mut self, s: &Scalar) -> Reg {
        match &s.op {
            Operand::Reg(r) => *r,
            Operand::Imm(imm) => {
                let r = self.b.reg(s.ty);
                let imm = match (s.ty, *imm) {
                    (ScalarType::F16, Imm::F32Bits(b)) => {
                        Imm::Int(f32_to_f16_bits(f32::from_bits(b)) as i64)
                    }
                    (ScalarType::Bf16, Imm::F32Bits(b)) => {
                        Imm::Int(f32_to_bf16_bits(f32::from_bits(b)) as i64)
                    }
                    (ScalarType::Pred, Imm::Int(v)) => {
                        // `setp` against itself makes a constant predicate without a form of
                        // `mov` that takes an immediate predicate.
                        let z = self.b.reg(ScalarType::U32);
                        self.inst(
                            Op::Mov {
                                ty: ScalarType::U32,
                            },
                            vec![z.into()],
                            vec![Operand::Imm(Imm::Int(0))],
                        );
                        let cmp = if v != 0 { Cmp::Eq } else { Cmp::Ne };
                        self.inst(
                            Op::Setp {
                                cmp,
                                ty: ScalarType::U32,
                                ftz: false,
                            },
                            vec![r.into()],
                            vec![z.into(), z.into()],
                        );
                        return r;
                    }
                    (_, other) => other,
                };
                self.inst(
                    Op::Mov { ty: mov_type(s.ty) },
                    vec![r.into()],
                    vec![Operand::Imm(imm)],
                );
                r
            }
            _ => {
                let r = self.b.reg(s.ty);
                self.inst(
                    Op::Mov { ty: mov_type(s.ty) },
                    vec![r.into()],
                    vec![s.op.clone()],
                );
                r
            }
        }
    }
}

/// `mov` on floats and integers uses the value's own type; 16-bit floats and predicates move
/// as bits.
pub fn mov_type(t: ScalarType) -> ScalarType {
    match t {
        ScalarType::F16 | ScalarType::Bf16 => ScalarType::B16,
        ScalarType::F16x2 | ScalarType::Bf16x2 | ScalarType::Tf32 => ScalarType::B32,
        other => other,
    }
}

/// IEEE binary16 bits of `x`, rounded to nearest even.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut h = m >> shift;
        let rest = m & ((1 << shift) - 1);
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

/// bfloat16 bits of `x`, rounded to nearest even.
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

#[cfg(test)]
mod tests;
