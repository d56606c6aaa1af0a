//! Comparisons and selects: `setp`, `set`, `selp`, `slct`.

use super::operands::{Frame, Kind};
use super::suffix::{classify, kind_of, main_class, operands, types, Class};
use crate::error::Error;
use crate::program::{BoolCombine, Cmp, CmpTy, Op, W};
use ptx_parser::{BoolOp, CmpOp, Flag, Instruction, Modifier, Opcode, Operand, Type};

fn cmp_of(frame: &Frame, op: CmpOp, class: Class) -> Result<(Cmp, CmpTy), Error> {
    let ty = match class {
        Class::Int { w, signed } => {
            if signed {
                CmpTy::Signed(w)
            } else {
                CmpTy::Unsigned(w)
            }
        }
        Class::Pred => CmpTy::Unsigned(W::B32),
        Class::F32 => CmpTy::F32,
        Class::F64 => CmpTy::F64,
        Class::Half { kind, pairs: false } => CmpTy::Half(kind),
        Class::Half { pairs: true, .. } => return Err(frame.unsupported("packed comparisons")),
    };
    let cmp = match op {
        CmpOp::Eq => Cmp::Eq,
        CmpOp::Ne => Cmp::Ne,
        CmpOp::Lt | CmpOp::Lo => Cmp::Lt,
        CmpOp::Le | CmpOp::Ls => Cmp::Le,
        CmpOp::Gt | CmpOp::Hi => Cmp::Gt,
        CmpOp::Ge | CmpOp::Hs => Cmp::Ge,
        CmpOp::Equ => Cmp::Equ,
        CmpOp::Neu => Cmp::Neu,
        CmpOp::Ltu => Cmp::Ltu,
        CmpOp::Leu => Cmp::Leu,
        CmpOp::Gtu => Cmp::Gtu,
        CmpOp::Geu => Cmp::Geu,
        CmpOp::Num => Cmp::Num,
        CmpOp::Nan => Cmp::Nan,
    };
    // lo/ls/hi/hs compare unsigned whatever the type says.
    let ty = match (op, ty) {
        (CmpOp::Lo | CmpOp::Ls | CmpOp::Hi | CmpOp::Hs, CmpTy::Signed(w)) => CmpTy::Unsigned(w),
        (_, ty) => ty,
    };
    Ok((cmp, ty))
}

pub(crate) fn setp(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 3)?;
    let cmp_op = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Cmp(c) => Some(*c),
            _ => None,
        })
        .ok_or_else(|| frame.malformed("missing comparison"))?;
    let combine = inst.modifiers.iter().find_map(|m| match m {
        Modifier::Bool(b) => Some(*b),
        _ => None,
    });
    let tys = types(inst);
    let src_ty = if inst.opcode == Opcode::Set {
        tys.get(1).copied()
    } else {
        tys.first().copied()
    };
    let src_ty = src_ty.ok_or_else(|| frame.malformed("missing operand type"))?;
    let class = classify(src_ty).ok_or_else(|| frame.unsupported(format!("type .{src_ty}")))?;
    let (cmp, ty) = cmp_of(frame, cmp_op, class)?;
    let ty = if ty == CmpTy::F32 && inst.has_flag(Flag::Ftz) {
        CmpTy::F32Ftz
    } else {
        ty
    };
    let k = kind_of(class);
    let a = frame.src(&ops[1], k)?;
    let b = frame.src(&ops[2], k)?;
    if inst.opcode == Opcode::Set {
        if combine.is_some() {
            return Err(frame.unsupported("set with a predicate combination"));
        }
        let float_result = tys.first() == Some(&Type::F32);
        let d = frame.dst(&ops[0])?;
        return Ok(Op::Set {
            cmp,
            ty,
            float_result,
            d,
            a,
            b,
        });
    }
    let (p, q) = match &ops[0] {
        Operand::PredPair(p, q) => (frame.reg(p)?, frame.reg(q)?),
        other => (frame.dst(other)?, frame.sink()),
    };
    let (combine, c, c_negated) = match combine {
        None => (BoolCombine::And, frame.konst(1), false),
        Some(b) => {
            let (c, neg) = frame.pred(
                ops.get(3)
                    .ok_or_else(|| frame.malformed("missing predicate operand"))?,
            )?;
            let combine = match b {
                BoolOp::And => BoolCombine::And,
                BoolOp::Or => BoolCombine::Or,
                BoolOp::Xor => BoolCombine::Xor,
            };
            (combine, c, neg)
        }
    };
    Ok(Op::Setp {
        cmp,
        ty,
        combine,
        c_negated,
        p,
        q,
        a,
        b,
        c,
    })
}

pub(crate) fn select(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 4)?;
    let tys = types(inst);
    let class = main_class(frame, inst)?;
    let k = kind_of(class);
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], k)?;
    let b = frame.src(&ops[2], k)?;
    if inst.opcode == Opcode::Selp {
        let (p, neg) = frame.pred(&ops[3])?;
        return Ok(if neg {
            Op::Selp { d, a: b, b: a, p }
        } else {
            Op::Selp { d, a, b, p }
        });
    }
    let float_c = tys.get(1) == Some(&Type::F32);
    let c = frame.src(
        &ops[3],
        if float_c {
            Kind::F32
        } else {
            Kind::Int(W::B32)
        },
    )?;
    Ok(Op::Slct {
        d,
        a,
        b,
        c,
        float_c,
    })
}
