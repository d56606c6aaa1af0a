//! Warp- and warpgroup-collective instructions: `shfl`, `vote`, `redux`, `match`, `elect`,
//! `bar.warp.sync`, `ldmatrix`, `stmatrix`, `mma.sync` and `wgmma.mma_async`.

use super::operands::{Frame, Kind};
use super::suffix::{operands, types};
use crate::error::Error;
use crate::numerics::{Fp8, Half};
use crate::program::{
    Collective, MmaKind, Op, ReduxOp, ShflMode, Slot, Space, VoteMode, WgmmaInput, NO_SLOT, W,
};
use ptx_parser::{AtomicOp, Flag, Instruction, Modifier, Opcode, Operand, Shape, Type};

/// The legacy forms without `.sync` name no member mask: they run over the lanes that are
/// there, so they carry none and a partial warp is not an error for them.
fn implicit_mask() -> Slot {
    NO_SLOT
}

fn vector_regs(
    frame: &mut Frame,
    op: &Operand,
    dst: bool,
    expect: usize,
) -> Result<Vec<Slot>, Error> {
    let items: Vec<&Operand> = match op {
        Operand::Vector(v) => v.iter().collect(),
        other => vec![other],
    };
    if items.len() != expect {
        return Err(frame.malformed(format!(
            "expected a vector of {expect} registers, found {}",
            items.len()
        )));
    }
    items
        .into_iter()
        .map(|o| {
            if dst {
                frame.dst(o)
            } else {
                frame.src(o, Kind::Int(W::B32))
            }
        })
        .collect()
}

fn regs4(v: &[Slot]) -> [Slot; 4] {
    let mut out = [0; 4];
    for (o, s) in out.iter_mut().zip(v) {
        *o = *s;
    }
    out
}

pub(crate) fn collective(
    frame: &mut Frame,
    inst: &Instruction,
    table: &mut Vec<Collective>,
) -> Result<Op, Error> {
    let c = match inst.opcode {
        Opcode::Shfl => {
            let mode = if inst.has_flag(Flag::Up) {
                ShflMode::Up
            } else if inst.has_flag(Flag::Down) {
                ShflMode::Down
            } else if inst.has_flag(Flag::Bfly) {
                ShflMode::Bfly
            } else if inst.has_flag(Flag::Idx) {
                ShflMode::Idx
            } else {
                return Err(frame.malformed("shfl needs .up, .down, .bfly or .idx"));
            };
            let ops = operands(frame, inst, 4)?;
            let (d, p) = match &ops[0] {
                Operand::PredPair(d, p) => (frame.reg(d)?, frame.reg(p)?),
                other => (frame.dst(other)?, frame.sink()),
            };
            let a = frame.src(&ops[1], Kind::Int(W::B32))?;
            let b = frame.src(&ops[2], Kind::Int(W::B32))?;
            let c = frame.src(&ops[3], Kind::Int(W::B32))?;
            let mask = match ops.get(4) {
                Some(m) => frame.src(m, Kind::Int(W::B32))?,
                None => implicit_mask(),
            };
            Collective::Shfl {
                mode,
                d,
                p,
                a,
                b,
                c,
                mask,
            }
        }
        Opcode::Vote => {
            let mode = if inst.has_flag(Flag::All) {
                VoteMode::All
            } else if inst.has_flag(Flag::Any) {
                VoteMode::Any
            } else if inst.has_flag(Flag::Uni) {
                VoteMode::Uni
            } else if inst.has_flag(Flag::Ballot) {
                VoteMode::Ballot
            } else {
                return Err(frame.malformed("vote needs .all, .any, .uni or .ballot"));
            };
            let ops = operands(frame, inst, 2)?;
            let d = frame.dst(&ops[0])?;
            let (a, negated) = frame.pred(&ops[1])?;
            let mask = match ops.get(2) {
                Some(m) => frame.src(m, Kind::Int(W::B32))?,
                None => implicit_mask(),
            };
            Collective::Vote {
                mode,
                d,
                a,
                negated,
                mask,
            }
        }
        Opcode::Redux => {
            let op = inst
                .modifiers
                .iter()
                .find_map(|m| match m {
                    Modifier::Atomic(a) => Some(*a),
                    _ => None,
                })
                .ok_or_else(|| frame.malformed("redux needs an operation"))?;
            let op = match op {
                AtomicOp::Add => ReduxOp::Add,
                AtomicOp::Min => ReduxOp::Min,
                AtomicOp::Max => ReduxOp::Max,
                AtomicOp::And => ReduxOp::And,
                AtomicOp::Or => ReduxOp::Or,
                AtomicOp::Xor => ReduxOp::Xor,
                other => return Err(frame.unsupported(format!("redux.{other}"))),
            };
            if inst.ty() == Some(Type::F32) {
                return Err(frame.unsupported("redux on f32"));
            }
            let signed = inst.ty() == Some(Type::S32);
            let ops = operands(frame, inst, 3)?;
            let d = frame.dst(&ops[0])?;
            let a = frame.src(&ops[1], Kind::Int(W::B32))?;
            let mask = frame.src(&ops[2], Kind::Int(W::B32))?;
            Collective::Redux {
                op,
                signed,
                d,
                a,
                mask,
            }
        }
        Opcode::Match => {
            let all = inst.has_flag(Flag::All);
            let wide = matches!(inst.ty(), Some(Type::B64 | Type::U64 | Type::S64));
            let ops = operands(frame, inst, 3)?;
            let (d, p) = match &ops[0] {
                Operand::PredPair(d, p) => (frame.reg(d)?, frame.reg(p)?),
                other => (frame.dst(other)?, frame.sink()),
            };
            let a = frame.src(&ops[1], Kind::Int(if wide { W::B64 } else { W::B32 }))?;
            let mask = frame.src(&ops[2], Kind::Int(W::B32))?;
            Collective::Match {
                all,
                wide,
                d,
                p,
                a,
                mask,
            }
        }
        Opcode::BarWarpSync => {
            let ops = operands(frame, inst, 1)?;
            Collective::WarpSync {
                mask: frame.src(&ops[0], Kind::Int(W::B32))?,
            }
        }
        Opcode::Mma => mma(frame, inst)?,
        Opcode::WgmmaMmaAsync => wgmma(frame, inst)?,
        Opcode::ElectSync => {
            let ops = operands(frame, inst, 2)?;
            let (d, p) = match &ops[0] {
                Operand::PredPair(d, p) => {
                    let d = if d == "_" {
                        frame.sink()
                    } else {
                        frame.reg(d)?
                    };
                    (d, frame.reg(p)?)
                }
                other => (frame.dst(other)?, frame.sink()),
            };
            let mask = frame.src(&ops[1], Kind::Int(W::B32))?;
            Collective::Elect { d, p, mask }
        }
        Opcode::Ldmatrix | Opcode::Stmatrix => {
            let count = if inst.has_flag(Flag::X4) {
                4
            } else if inst.has_flag(Flag::X2) {
                2
            } else {
                1
            };
            let shape = inst.modifiers.iter().find_map(|m| match m {
                Modifier::Shape(s) => Some(*s),
                _ => None,
            });
            if shape
                != Some(Shape {
                    m: 8,
                    n: 8,
                    k: None,
                })
                || !matches!(inst.ty(), Some(Type::B16))
            {
                return Err(frame.unsupported("only the .m8n8 .b16 shape"));
            }
            let trans = inst.has_flag(Flag::Trans);
            let ops = operands(frame, inst, 2)?;
            if inst.opcode == Opcode::Ldmatrix {
                let d = vector_regs(frame, &ops[0], true, count)?;
                let at = frame.address(&ops[1], Space::Shared)?;
                Collective::Ldmatrix {
                    count: count as u8,
                    trans,
                    d: regs4(&d),
                    at,
                }
            } else {
                let at = frame.address(&ops[0], Space::Shared)?;
                let s = vector_regs(frame, &ops[1], false, count)?;
                Collective::Stmatrix {
                    count: count as u8,
                    trans,
                    s: regs4(&s),
                    at,
                }
            }
        }
        _ => return Err(frame.unsupported("")),
    };
    table.push(c);
    Ok(Op::Collective(table.len() as u32 - 1))
}

fn mma(frame: &mut Frame, inst: &Instruction) -> Result<Collective, Error> {
    let shape = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Shape(s) => Some(*s),
            _ => None,
        })
        .ok_or_else(|| frame.malformed("mma needs a shape"))?;
    let tys = types(inst);
    if tys.len() != 4 {
        return Err(frame.unsupported("mma forms without four types (d, a, b, c)"));
    }
    if !(inst.has_flag(Flag::Row) && inst.has_flag(Flag::Col)) {
        return Err(frame.unsupported("mma layouts other than .row.col"));
    }
    let half = |t: Type| match t {
        Type::F16 => Some(Half::F16),
        Type::Bf16 => Some(Half::Bf16),
        _ => None,
    };
    let kind = match (shape.m, shape.n, shape.k, half(tys[1]), tys[1]) {
        (16, 8, Some(16), Some(h), _) => MmaKind::M16N8K16Half(h),
        (16, 8, Some(8), Some(h), _) => MmaKind::M16N8K8Half(h),
        (16, 8, Some(8), None, Type::Tf32) => MmaKind::M16N8K8Tf32,
        (16, 8, Some(4), None, Type::Tf32) => MmaKind::M16N8K4Tf32,
        (16, 8, Some(32), None, Type::S8 | Type::U8) if matches!(tys[2], Type::S8 | Type::U8) => {
            MmaKind::M16N8K32Int8 {
                a_signed: tys[1] == Type::S8,
                b_signed: tys[2] == Type::S8,
            }
        }
        _ => return Err(frame.unsupported(format!("mma shape .{shape} with .{} inputs", tys[1]))),
    };
    let int8 = matches!(kind, MmaKind::M16N8K32Int8 { .. });
    if tys[1] != tys[2] && !int8 {
        return Err(frame.unsupported("mma with different A and B types"));
    }
    if int8 && (tys[0] != Type::S32 || tys[3] != Type::S32) {
        return Err(frame.unsupported("integer mma accumulates in .s32"));
    }
    let f16_acc_d = match tys[0] {
        Type::F32 => false,
        Type::S32 if int8 => false,
        Type::F16
            if matches!(
                kind,
                MmaKind::M16N8K16Half(Half::F16) | MmaKind::M16N8K8Half(Half::F16)
            ) =>
        {
            true
        }
        other => return Err(frame.unsupported(format!("mma accumulator .{other}"))),
    };
    let f16_acc_c = match tys[3] {
        Type::F32 => false,
        Type::S32 if int8 => false,
        Type::F16
            if matches!(
                kind,
                MmaKind::M16N8K16Half(Half::F16) | MmaKind::M16N8K8Half(Half::F16)
            ) =>
        {
            true
        }
        other => return Err(frame.unsupported(format!("mma accumulator .{other}"))),
    };
    let (na, nb) = match kind {
        MmaKind::M16N8K16Half(_) => (4, 2),
        MmaKind::M16N8K8Half(_) => (2, 1),
        MmaKind::M16N8K8Tf32 => (4, 2),
        MmaKind::M16N8K4Tf32 => (2, 1),
        MmaKind::M16N8K32Int8 { .. } => (4, 2),
    };
    let ops = operands(frame, inst, 4)?;
    let d = vector_regs(frame, &ops[0], true, if f16_acc_d { 2 } else { 4 })?;
    let a = vector_regs(frame, &ops[1], false, na)?;
    let b = vector_regs(frame, &ops[2], false, nb)?;
    let c = vector_regs(frame, &ops[3], false, if f16_acc_c { 2 } else { 4 })?;
    Ok(Collective::Mma {
        kind,
        f16_acc_c,
        f16_acc_d,
        satfinite: inst.has_flag(Flag::Satfinite),
        d,
        a,
        b,
        c,
    })
}

/// `wgmma.mma_async.sync.aligned.m64nNkK.f32.<a>.<b> d, a, b-desc, scale-d, imm-scale-a,
/// imm-scale-b{, imm-trans-a, imm-trans-b}`: f16/bf16 (K 16, the transpose flags), tf32 (K 8)
/// or fp8 e4m3/e5m2 in any pairing (K 32), both K-major and without transpose flags.
fn wgmma(frame: &mut Frame, inst: &Instruction) -> Result<Collective, Error> {
    let shape = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Shape(s) => Some(*s),
            _ => None,
        })
        .ok_or_else(|| frame.malformed("wgmma needs a shape"))?;
    let tys = types(inst);
    let input = |t: Type| match t {
        Type::Bf16 => Some(WgmmaInput::Half(Half::Bf16)),
        Type::F16 => Some(WgmmaInput::Half(Half::F16)),
        Type::Tf32 => Some(WgmmaInput::Tf32),
        Type::E4m3 => Some(WgmmaInput::Fp8(Fp8::E4m3)),
        Type::E5m2 => Some(WgmmaInput::Fp8(Fp8::E5m2)),
        _ => None,
    };
    let (a_ty, b_ty) = match tys.as_slice() {
        [Type::F32, a, b] => match (input(*a), input(*b)) {
            (Some(a @ WgmmaInput::Fp8(_)), Some(b @ WgmmaInput::Fp8(_))) => (a, b),
            (Some(a), Some(b)) if a == b => (a, b),
            _ => return Err(frame.unsupported(format!("wgmma types .f32.{a}.{b}"))),
        },
        _ => return Err(frame.unsupported("wgmma accumulating other than in f32 (.f32.<a>.<b>)")),
    };
    if shape.m != 64
        || shape.k != Some(a_ty.k() as u32)
        || shape.n % 8 != 0
        || shape.n == 0
        || shape.n > 256
    {
        return Err(frame.unsupported(format!("wgmma shape .{shape} for {a_ty:?}")));
    }
    let ops = operands(frame, inst, 6)?;
    let d = vector_regs(frame, &ops[0], true, (shape.n / 2) as usize)?;
    let (a, a_desc, rest) = match &ops[1] {
        Operand::Vector(_) => (vector_regs(frame, &ops[1], false, 4)?, NO_SLOT, &ops[2..]),
        other => (Vec::new(), frame.src(other, Kind::Int(W::B64))?, &ops[2..]),
    };
    let b_desc = frame.src(&rest[0], Kind::Int(W::B64))?;
    let (scale_d, negated) = frame.pred(&rest[1])?;
    if negated {
        return Err(frame.unsupported("a negated scale-d predicate"));
    }
    let imm = |frame: &Frame, op: Option<&Operand>| -> Result<i64, Error> {
        match op {
            Some(Operand::Imm(ptx_parser::Immediate::Int(i))) => Ok(i.as_i64()),
            None => Ok(0),
            Some(other) => Err(frame.malformed(format!("expected an immediate, found {other:?}"))),
        }
    };
    let negate_a = imm(frame, rest.get(2))? == -1;
    let negate_b = imm(frame, rest.get(3))? == -1;
    // The transpose flags: both for descriptor A, only B's for register A.
    let flags = rest[4..]
        .iter()
        .map(|o| imm(frame, Some(o)))
        .collect::<Result<Vec<_>, _>>()?;
    let sixteen_bit = matches!(a_ty, WgmmaInput::Half(_));
    let (trans_a, trans_b) = match (a.is_empty(), flags.as_slice()) {
        (true, [ta, tb]) if sixteen_bit => (*ta == 1, *tb == 1),
        (false, [tb]) if sixteen_bit => (false, *tb == 1),
        (_, []) => (false, false),
        _ => return Err(frame.malformed(
            "wgmma takes imm-trans-a (shared-memory A only) and imm-trans-b, for f16 and bf16 only",
        )),
    };
    Ok(Collective::Wgmma {
        a_ty,
        b_ty,
        n: shape.n,
        d,
        a,
        a_desc,
        b_desc,
        scale_d,
        negate_a,
        negate_b,
        trans_a,
        trans_b,
    })
}
