//! Decoding of memory instructions: loads, stores, atomics, address conversions, `cp.async`.

use super::operands::{Frame, Kind, Symbol};
use super::suffix::{operands, types};
use crate::error::Error;
use crate::program::{AtomOp, AtomTy, Elem, MbarOp, MemRef, Op, Slot, Space, W};
use ptx_parser::{
    Address, AddressBase, AtomicOp, Flag, Immediate, Instruction, Modifier, Opcode, Operand,
    StateSpace, Type,
};

pub(crate) fn spaces(inst: &Instruction) -> Vec<StateSpace> {
    inst.modifiers
        .iter()
        .filter_map(|m| match m {
            Modifier::Space(s) => Some(*s),
            _ => None,
        })
        .collect()
}

fn space_of(frame: &Frame, s: Option<StateSpace>) -> Result<Option<Space>, Error> {
    Ok(match s {
        None => Some(Space::Generic),
        Some(StateSpace::Global) => Some(Space::Global),
        Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) => {
            Some(Space::Shared)
        }
        Some(StateSpace::Local) => Some(Space::Local),
        Some(StateSpace::Const) => Some(Space::Const),
        Some(StateSpace::Param | StateSpace::ParamEntry) => None,
        Some(other) => return Err(frame.unsupported(format!("state space .{other}"))),
    })
}

fn elem_of(frame: &Frame, t: Type) -> Result<Elem, Error> {
    use Type::*;
    let signed = matches!(t, S8 | S16 | S32 | S64);
    let bytes = match t {
        B8 | U8 | S8 => 1,
        B16 | U16 | S16 | F16 | Bf16 => 2,
        B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 => 4,
        B64 | U64 | S64 | F64 => 8,
        other => return Err(frame.unsupported(format!("memory access of .{other}"))),
    };
    Ok(Elem { bytes, signed })
}

fn elem_kind(t: Type) -> Kind {
    match t {
        Type::F32 => Kind::F32,
        Type::F64 => Kind::F64,
        t => match t.size_bytes() {
            Some(1) => Kind::Int(W::B8),
            Some(2) => Kind::Int(W::B16),
            Some(8) => Kind::Int(W::B64),
            _ => Kind::Int(W::B32),
        },
    }
}

pub(crate) fn load_store(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let ty = inst.ty().ok_or_else(|| frame.malformed("missing type"))?;
    let elem = elem_of(frame, ty)?;
    let n = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Vector(v) => Some(v.lanes()),
            _ => None,
        })
        .unwrap_or(1);
    if n > 4 {
        return Err(frame.unsupported("vectors wider than .v4"));
    }
    let is_store = inst.opcode == Opcode::St;
    let (addr_op, val_op) = if is_store {
        (&ops[0], &ops[1])
    } else {
        (&ops[1], &ops[0])
    };
    let mut regs = [0; 4];
    let vals: Vec<&Operand> = match val_op {
        Operand::Vector(v) => v.iter().collect(),
        other => vec![other],
    };
    if vals.len() != n as usize {
        return Err(frame.malformed(format!("expected {n} values, found {}", vals.len())));
    }
    for (r, v) in regs.iter_mut().zip(&vals) {
        *r = if is_store {
            frame.src(v, elem_kind(ty))?
        } else {
            frame.dst(v)?
        };
    }
    let space = space_of(frame, inst.space())?;
    let Some(space) = space else {
        let Operand::Address(Address {
            base: AddressBase::Symbol(name),
            offset,
        }) = addr_op
        else {
            return Err(frame.unsupported("ld.param/st.param through a register"));
        };
        let extra = offset.unwrap_or(0);
        let at = match frame.symbols.get(name).copied() {
            // A device function's parameters and call-sequence `.param` variables live in
            // per-thread memory.
            Some(Symbol::Local { offset: base }) => MemRef {
                space: Space::Local,
                base: frame.konst(base as u64),
                offset: extra,
            },
            Some(Symbol::Param {
                offset: base,
                bytes,
            }) if !is_store => {
                let offset = base as i64 + extra;
                let end = extra + elem.bytes as i64 * n as i64;
                if extra < 0 || end > bytes as i64 {
                    return Err(frame
                        .malformed(format!("the load reads past the end of parameter `{name}`")));
                }
                return Ok(Op::LdParam {
                    offset: offset as u32,
                    elem,
                    n: n as u8,
                    d: regs,
                });
            }
            Some(Symbol::Param { .. }) => {
                return Err(frame.malformed("a kernel parameter cannot be stored to"))
            }
            _ => return Err(frame.malformed(format!("`{name}` is not a parameter"))),
        };
        return Ok(if is_store {
            Op::St {
                at,
                elem,
                n: n as u8,
                s: regs,
            }
        } else {
            Op::Ld {
                at,
                elem,
                n: n as u8,
                d: regs,
            }
        });
    };
    let at = frame.address(addr_op, space)?;
    Ok(if is_store {
        Op::St {
            at,
            elem,
            n: n as u8,
            s: regs,
        }
    } else {
        Op::Ld {
            at,
            elem,
            n: n as u8,
            d: regs,
        }
    })
}

pub(crate) fn atomic(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let is_red = inst.opcode == Opcode::Red;
    let ops = operands(frame, inst, if is_red { 2 } else { 3 })?;
    let op = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Atomic(a) => Some(*a),
            _ => None,
        })
        .ok_or_else(|| frame.malformed("missing atomic operation"))?;
    let op = match op {
        AtomicOp::Add => AtomOp::Add,
        AtomicOp::Min => AtomOp::Min,
        AtomicOp::Max => AtomOp::Max,
        AtomicOp::Exch => AtomOp::Exch,
        AtomicOp::Cas => AtomOp::Cas,
        AtomicOp::And => AtomOp::And,
        AtomicOp::Or => AtomOp::Or,
        AtomicOp::Xor => AtomOp::Xor,
        AtomicOp::Inc => AtomOp::Inc,
        AtomicOp::Dec => AtomOp::Dec,
        AtomicOp::Popc => return Err(frame.unsupported("atomic .popc")),
    };
    let t = inst.ty().ok_or_else(|| frame.malformed("missing type"))?;
    let ty = match t {
        Type::U32 | Type::B32 => AtomTy::U32,
        Type::S32 => AtomTy::S32,
        Type::U64 | Type::B64 => AtomTy::U64,
        Type::S64 => AtomTy::S64,
        Type::F32 => AtomTy::F32,
        Type::F64 => AtomTy::F64,
        Type::F16x2 => AtomTy::F16x2,
        Type::Bf16x2 => AtomTy::Bf16x2,
        Type::F16 => AtomTy::F16,
        Type::Bf16 => AtomTy::Bf16,
        Type::B16 | Type::U16 if matches!(op, AtomOp::Cas | AtomOp::Exch) => AtomTy::B16,
        other => return Err(frame.unsupported(format!("atomic .{} on .{other}", op_word(op)))),
    };
    if inst
        .modifiers
        .iter()
        .any(|m| matches!(m, Modifier::Vector(_)))
    {
        return Err(frame.unsupported("vector atomics"));
    }
    let space =
        space_of(frame, inst.space())?.ok_or_else(|| frame.malformed("atomics on .param"))?;
    let kind = match ty {
        AtomTy::F32 => Kind::F32,
        AtomTy::F64 => Kind::F64,
        AtomTy::U64 | AtomTy::S64 => Kind::Int(W::B64),
        AtomTy::F16 | AtomTy::Bf16 | AtomTy::B16 => Kind::Int(W::B16),
        _ => Kind::Int(W::B32),
    };
    let (d, addr_at) = if is_red {
        (frame.sink(), 0)
    } else {
        (frame.dst(&ops[0])?, 1)
    };
    let at = frame.address(&ops[addr_at], space)?;
    let b = frame.src(&ops[addr_at + 1], kind)?;
    let c = match ops.get(addr_at + 2) {
        Some(op) => frame.src(op, kind)?,
        None => frame.konst(0),
    };
    Ok(Op::Atom {
        at,
        op,
        ty,
        d,
        b,
        c,
    })
}

fn op_word(op: AtomOp) -> &'static str {
    match op {
        AtomOp::Add => "add",
        AtomOp::Min => "min",
        AtomOp::Max => "max",
        AtomOp::Exch => "exch",
        AtomOp::Cas => "cas",
        AtomOp::And => "and",
        AtomOp::Or => "or",
        AtomOp::Xor => "xor",
        AtomOp::Inc => "inc",
        AtomOp::Dec => "dec",
    }
}

pub(crate) fn cvta(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let space = match inst.space() {
        Some(StateSpace::Param | StateSpace::ParamEntry) => Space::Param,
        s => space_of(frame, s)?.ok_or_else(|| frame.unsupported("cvta of this space"))?,
    };
    let w = if inst.ty() == Some(Type::U32) {
        W::B32
    } else {
        W::B64
    };
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], Kind::Int(w))?;
    Ok(Op::Cvta {
        to_generic: !inst.has_flag(Flag::To),
        space,
        d,
        a,
    })
}

pub(crate) fn isspacep(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let space =
        space_of(frame, inst.space())?.ok_or_else(|| frame.unsupported("isspacep.param"))?;
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], Kind::Int(W::B64))?;
    Ok(Op::Isspacep { space, d, a })
}

fn int_imm(frame: &Frame, op: &Operand) -> Result<u64, Error> {
    match op {
        Operand::Imm(Immediate::Int(i)) => Ok(i.bits()),
        other => Err(frame.unsupported(format!(
            "a non-constant operand {other:?} where a constant is expected"
        ))),
    }
}

pub(crate) fn cp_async(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 3)?;
    let sp = spaces(inst);
    if sp.len() != 2 {
        return Err(frame.unsupported("cp.async forms other than .shared.global"));
    }
    let dst = frame.address(&ops[0], Space::Shared)?;
    let src = frame.address(&ops[1], Space::Global)?;
    let bytes = int_imm(frame, &ops[2])?;
    if ![4, 8, 16].contains(&bytes) {
        return Err(frame.malformed("cp.async copies 4, 8 or 16 bytes"));
    }
    let src_bytes = match ops.get(3) {
        Some(op @ (Operand::Reg(_) | Operand::Imm(Immediate::Int(_)))) => {
            frame.src(op, Kind::Int(W::B32))?
        }
        Some(Operand::Symbol(name)) if frame.lookup(name).is_some() => frame.reg(name)?,
        _ => frame.konst(bytes),
    };
    let _ = types(inst);
    Ok(Op::CpAsync {
        dst,
        src,
        bytes: bytes as u8,
        src_bytes,
    })
}

pub(crate) fn cp_async_wait(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 1)?;
    Ok(Op::CpAsyncWait {
        n: int_imm(frame, &ops[0])? as u32,
    })
}

/// `mbarrier.*` and `cp.async.mbarrier.arrive`.
pub(crate) fn mbarrier(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let other = |w: &str| {
        inst.modifiers
            .iter()
            .any(|m| matches!(m, Modifier::Other(o) if o == w))
    };
    let space = match inst.space() {
        None => Space::Generic,
        // A `.shared::cluster` address may name another CTA's mbarrier (from `mapa`); the
        // shared space resolves it.
        Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) => {
            Space::Shared
        }
        Some(other) => return Err(frame.unsupported(format!("mbarrier in .{other}"))),
    };
    let ops = &inst.operands;
    let addr_at = ops.iter().position(|o| matches!(o, Operand::Address(_)));
    let addr_at = addr_at.ok_or_else(|| frame.malformed("mbarrier needs an address"))?;
    let at = frame.address(&ops[addr_at], space)?;
    let dest = |frame: &mut Frame| -> Result<Slot, Error> {
        match addr_at {
            0 => Ok(frame.sink()),
            _ => frame.dst(&ops[0]),
        }
    };
    let operand_after = |frame: &mut Frame, default: u64| -> Result<Slot, Error> {
        match ops.get(addr_at + 1) {
            Some(op) => frame.src(op, Kind::Int(W::B64)),
            None => Ok(frame.konst(default)),
        }
    };
    let (op, d, b) = match &inst.opcode {
        Opcode::MbarrierInit => (MbarOp::Init, frame.sink(), operand_after(frame, 1)?),
        Opcode::MbarrierInval => (MbarOp::Inval, frame.sink(), frame.konst(0)),
        Opcode::MbarrierArrive if other("expect_tx") => (
            MbarOp::ArriveExpectTx,
            dest(frame)?,
            operand_after(frame, 0)?,
        ),
        Opcode::MbarrierArrive => (
            MbarOp::Arrive { drop: false },
            dest(frame)?,
            operand_after(frame, 1)?,
        ),
        Opcode::MbarrierArriveDrop => (
            MbarOp::Arrive { drop: true },
            dest(frame)?,
            operand_after(frame, 1)?,
        ),
        Opcode::MbarrierExpectTx => (MbarOp::ExpectTx, frame.sink(), operand_after(frame, 0)?),
        Opcode::MbarrierTestWait | Opcode::MbarrierTryWait => (
            MbarOp::Wait {
                parity: inst.has_flag(Flag::Parity),
            },
            dest(frame)?,
            operand_after(frame, 0)?,
        ),
        Opcode::CpAsyncMbarrierArrive => (
            MbarOp::CpAsyncArrive {
                noinc: other("noinc"),
            },
            frame.sink(),
            frame.konst(0),
        ),
        Opcode::Other(w) if w == "mbarrier" && other("complete_tx") => {
            (MbarOp::CompleteTx, frame.sink(), operand_after(frame, 0)?)
        }
        _ => return Err(frame.unsupported("")),
    };
    Ok(Op::Mbarrier { op, at, d, b })
}

/// `mapa.shared::cluster.{u32,u64} d, a, rank`.
pub(crate) fn mapa(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    if inst.space() != Some(StateSpace::SharedCluster) {
        return Err(frame.unsupported("`mapa` outside `.shared::cluster` (generic addresses)"));
    }
    let ops = operands(frame, inst, 3)?;
    Ok(Op::Mapa {
        d: frame.dst(&ops[0])?,
        a: frame.src(&ops[1], Kind::Int(W::B32))?,
        rank: frame.src(&ops[2], Kind::Int(W::B32))?,
    })
}

/// `cp.async.bulk` between global and shared memory (the non-tensor forms).
pub(crate) fn bulk_copy(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 3)?;
    let sp = spaces(inst);
    let space =
        |frame: &Frame, s: Option<&StateSpace>| match s {
            Some(StateSpace::Global) => Ok(Space::Global),
            Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) => {
                Ok(Space::Shared)
            }
            _ => Err(frame
                .unsupported("cp.async.bulk forms other than between global and shared memory")),
        };
    let (dst_space, src_space) = (space(frame, sp.first())?, space(frame, sp.get(1))?);
    if dst_space == src_space {
        return Err(frame.unsupported("cp.async.bulk within one state space"));
    }
    let dst = frame.address(&ops[0], dst_space)?;
    let src = frame.address(&ops[1], src_space)?;
    let size = frame.src(&ops[2], Kind::Int(W::B32))?;
    let mbar = match ops.get(3) {
        Some(op @ Operand::Address(_)) => Some(frame.address(op, Space::Shared)?),
        _ => None,
    };
    Ok(Op::BulkCopy {
        dst,
        src,
        size,
        mbar,
    })
}
