//! `cvt` between scalar types, packed half pairs and FP8 pairs.

use super::operands::{Frame, Kind};
use super::suffix::{float_rounding, operands, rounding, types};
use crate::error::Error;
use crate::numerics::{CvtMode, CvtRounding, CvtType, Fp8, Rounding as R};
use crate::program::{Op, W};
use ptx_parser::{Flag, Instruction, Rounding, Type};

fn cvt_type(frame: &Frame, t: Type) -> Result<CvtType, Error> {
    use Type::*;
    Ok(match t {
        U8 | B8 => CvtType::U8,
        U16 | B16 => CvtType::U16,
        U32 | B32 => CvtType::U32,
        U64 | B64 => CvtType::U64,
        S8 => CvtType::S8,
        S16 => CvtType::S16,
        S32 => CvtType::S32,
        S64 => CvtType::S64,
        F16 => CvtType::F16,
        Bf16 => CvtType::Bf16,
        Tf32 => CvtType::Tf32,
        F32 => CvtType::F32,
        F64 => CvtType::F64,
        other => return Err(frame.unsupported(format!("conversion with .{other}"))),
    })
}

fn cvt_kind(t: CvtType) -> Kind {
    match t {
        CvtType::F32 | CvtType::Tf32 => Kind::F32,
        CvtType::F64 => Kind::F64,
        CvtType::U8 | CvtType::S8 => Kind::Int(W::B8),
        CvtType::U16 | CvtType::S16 | CvtType::F16 | CvtType::Bf16 => Kind::Int(W::B16),
        CvtType::U32 | CvtType::S32 => Kind::Int(W::B32),
        CvtType::U64 | CvtType::S64 => Kind::Int(W::B64),
    }
}

pub(crate) fn cvt(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let tys = types(inst);
    if tys.len() != 2 {
        return Err(frame.malformed("cvt needs a destination and a source type"));
    }
    let rounding = match rounding(inst) {
        None => CvtRounding::Default,
        Some(r @ (Rounding::Rn | Rounding::Rz | Rounding::Rm | Rounding::Rp | Rounding::Rna)) => {
            CvtRounding::Float(float_rounding(frame, Some(r))?)
        }
        Some(Rounding::Rni) => CvtRounding::Integer(R::NearestEven),
        Some(Rounding::Rzi) => CvtRounding::Integer(R::Zero),
        Some(Rounding::Rmi) => CvtRounding::Integer(R::Down),
        Some(Rounding::Rpi) => CvtRounding::Integer(R::Up),
        Some(other) => return Err(frame.unsupported(format!("rounding .{other}"))),
    };
    let mode = CvtMode {
        rounding,
        ftz: inst.has_flag(Flag::Ftz),
        sat: inst.has_flag(Flag::Sat),
        relu: inst.has_flag(Flag::Relu),
        satfinite: inst.has_flag(Flag::Satfinite),
    };
    let d = frame.dst(&ops[0])?;
    let fp8 = |t: Type| match t {
        Type::E4m3x2 => Some(Fp8::E4m3),
        Type::E5m2x2 => Some(Fp8::E5m2),
        _ => None,
    };
    if let Some(to) = fp8(tys[0]) {
        return match tys[1] {
            Type::F32 => {
                let ops = operands(frame, inst, 3)?;
                let a = frame.src(&ops[1], Kind::F32)?;
                let b = frame.src(&ops[2], Kind::F32)?;
                Ok(Op::CvtToFp8Pair {
                    to,
                    satfinite: mode.satfinite,
                    relu: mode.relu,
                    d,
                    a,
                    b,
                })
            }
            Type::F16x2 => {
                let a = frame.src(&ops[1], Kind::Int(W::B32))?;
                Ok(Op::CvtHalf2ToFp8Pair {
                    to,
                    satfinite: mode.satfinite,
                    relu: mode.relu,
                    d,
                    a,
                })
            }
            other => Err(frame.unsupported(format!("conversion from .{other} to fp8"))),
        };
    }
    if let (Type::F16x2, Some(from)) = (tys[0], fp8(tys[1])) {
        let a = frame.src(&ops[1], Kind::Int(W::B16))?;
        return Ok(Op::CvtFp8PairToHalf2 {
            from,
            relu: mode.relu,
            d,
            a,
        });
    }
    if matches!(tys[0], Type::F16x2 | Type::Bf16x2) {
        if tys[1] != Type::F32 {
            return Err(frame.unsupported("packed conversion from a type other than f32"));
        }
        let to = if tys[0] == Type::F16x2 {
            CvtType::F16
        } else {
            CvtType::Bf16
        };
        let ops = operands(frame, inst, 3)?;
        let a = frame.src(&ops[1], Kind::F32)?;
        let b = frame.src(&ops[2], Kind::F32)?;
        return Ok(Op::CvtPack { to, mode, d, a, b });
    }
    let to = cvt_type(frame, tys[0])?;
    let from = cvt_type(frame, tys[1])?;
    let a = frame.src(&ops[1], cvt_kind(from))?;
    Ok(Op::Cvt {
        from,
        to,
        mode,
        d,
        a,
    })
}
