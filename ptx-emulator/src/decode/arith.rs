//! Integer and floating-point arithmetic: `add`, `sub`, `mul`, `mad`, `fma`, `div`, `rem`,
//! `min`, `max`, `abs`, `neg`, carry forms, 24-bit forms, `sad`, `copysign`.

use super::operands::{Frame, Kind};
use super::suffix::{float_mode, kind_of, main_class, operands, Class};
use crate::error::Error;
use crate::numerics::{RoundedOp, Rounding as R};
use crate::program::{FloatOp, HalfOp, IntOp, Op, Slot, W};
use ptx_parser::{Flag, Instruction, Opcode, Operand};

fn wider(w: W) -> W {
    match w {
        W::B8 => W::B16,
        W::B16 => W::B32,
        _ => W::B64,
    }
}

/// Sources `a, b, c` of `ops[1..]` (missing ones become a zero constant).
pub(crate) fn srcs(
    frame: &mut Frame,
    ops: &[Operand],
    kinds: [Kind; 3],
) -> Result<[Slot; 3], Error> {
    let mut out = [0; 3];
    for (i, kind) in kinds.into_iter().enumerate() {
        out[i] = match ops.get(i + 1) {
            Some(op) => frame.src(op, kind)?,
            None => frame.konst(0),
        };
    }
    Ok(out)
}

pub(crate) fn arith(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    match class {
        Class::Int { w, signed } => int_arith(frame, inst, ops, d, w, signed),
        Class::Pred => Err(frame.unsupported("arithmetic on predicates")),
        Class::F32 | Class::F64 => float_arith(frame, inst, ops, d, class == Class::F64),
        Class::Half { kind, pairs } => {
            let k = kind_of(class);
            let [a, b, c] = srcs(frame, ops, [k, k, k])?;
            let mode = float_mode(frame, inst)?;
            let nan = inst.has_flag(Flag::NaN);
            let op = match inst.opcode {
                Opcode::Add => HalfOp::Rounded(RoundedOp::Add),
                Opcode::Sub => HalfOp::Rounded(RoundedOp::Sub),
                Opcode::Mul => HalfOp::Rounded(RoundedOp::Mul),
                Opcode::Fma | Opcode::Mad => HalfOp::Rounded(RoundedOp::Fma),
                Opcode::Min => HalfOp::Min { nan },
                Opcode::Max => HalfOp::Max { nan },
                Opcode::Neg => HalfOp::Neg,
                Opcode::Abs => HalfOp::Abs,
                _ => return Err(frame.unsupported("this operation on f16/bf16")),
            };
            Ok(Op::Half {
                kind,
                pairs,
                op,
                mode,
                d,
                a,
                b,
                c,
            })
        }
    }
}

fn int_arith(
    frame: &mut Frame,
    inst: &Instruction,
    ops: &[Operand],
    d: Slot,
    w: W,
    signed: bool,
) -> Result<Op, Error> {
    let cc = inst.has_flag(Flag::Cc);
    let hi = inst.has_flag(Flag::Hi);
    let wide = inst.has_flag(Flag::Wide);
    let sat = inst.has_flag(Flag::Sat);
    let k = Kind::Int(w);
    let op = match inst.opcode {
        Opcode::Add if cc => IntOp::AddCc,
        Opcode::Add if sat => IntOp::AddSat,
        Opcode::Add => IntOp::Add,
        Opcode::Sub if cc => IntOp::SubCc,
        Opcode::Sub if sat => IntOp::SubSat,
        Opcode::Sub => IntOp::Sub,
        Opcode::Addc => IntOp::AddC { cc },
        Opcode::Subc => IntOp::SubC { cc },
        Opcode::Mul if wide => IntOp::MulWide,
        Opcode::Mul if hi => IntOp::MulHi,
        Opcode::Mul => IntOp::MulLo,
        Opcode::Mul24 if hi => IntOp::Mul24Hi,
        Opcode::Mul24 => IntOp::Mul24Lo,
        Opcode::Mad24 if hi => return Err(frame.unsupported("mad24.hi")),
        Opcode::Mad24 => IntOp::Mad24Lo,
        Opcode::Mad if wide => IntOp::MadWide,
        Opcode::Mad if cc && hi => IntOp::MadHiCc {
            carry_in: false,
            carry_out: true,
        },
        Opcode::Mad if cc => IntOp::MadLoCc {
            carry_in: false,
            carry_out: true,
        },
        Opcode::Mad if hi => IntOp::MadHi,
        Opcode::Mad => IntOp::MadLo,
        Opcode::Madc if hi => IntOp::MadHiCc {
            carry_in: true,
            carry_out: cc,
        },
        Opcode::Madc => IntOp::MadLoCc {
            carry_in: true,
            carry_out: cc,
        },
        Opcode::Div => IntOp::Div,
        Opcode::Rem => IntOp::Rem,
        Opcode::Min => IntOp::Min,
        Opcode::Max => IntOp::Max,
        Opcode::Abs => IntOp::Abs,
        Opcode::Neg => IntOp::Neg,
        Opcode::Sad => IntOp::Sad,
        _ => return Err(frame.unsupported("this operation on integers")),
    };
    let c_kind = if op == IntOp::MadWide {
        Kind::Int(wider(w))
    } else {
        k
    };
    let [a, b, c] = srcs(frame, ops, [k, k, c_kind])?;
    let e = frame.konst(0);
    Ok(Op::Int {
        op,
        w,
        signed,
        d,
        a,
        b,
        c,
        e,
    })
}

fn float_arith(
    frame: &mut Frame,
    inst: &Instruction,
    ops: &[Operand],
    d: Slot,
    is_f64: bool,
) -> Result<Op, Error> {
    let k = if is_f64 { Kind::F64 } else { Kind::F32 };
    let mut mode = float_mode(frame, inst)?;
    let approx = inst.has_flag(Flag::Approx) || inst.has_flag(Flag::Full);
    if approx {
        // div.approx and div.full are within 2 ulp of IEEE division; the emulator divides exactly.
        mode.rounding = R::NearestEven;
    }
    let rounded = match inst.opcode {
        Opcode::Add => Some(RoundedOp::Add),
        Opcode::Sub => Some(RoundedOp::Sub),
        Opcode::Mul => Some(RoundedOp::Mul),
        Opcode::Fma | Opcode::Mad => Some(RoundedOp::Fma),
        Opcode::Div => Some(RoundedOp::Div),
        _ => None,
    };
    let [a, b, c] = srcs(frame, ops, [k, k, k])?;
    if let Some(rop) = rounded {
        if mode.is_native() {
            let op = match rop {
                RoundedOp::Add => FloatOp::Add,
                RoundedOp::Sub => FloatOp::Sub,
                RoundedOp::Mul => FloatOp::Mul,
                RoundedOp::Fma => FloatOp::Fma,
                _ => FloatOp::Div,
            };
            return Ok(if is_f64 {
                Op::F64 { op, d, a, b, c }
            } else {
                Op::F32 { op, d, a, b, c }
            });
        }
        return Ok(if is_f64 {
            Op::F64Mode {
                op: rop,
                mode,
                d,
                a,
                b,
                c,
            }
        } else {
            Op::F32Mode {
                op: rop,
                mode,
                d,
                a,
                b,
                c,
            }
        });
    }
    let nan = inst.has_flag(Flag::NaN);
    let op = match inst.opcode {
        Opcode::Min if nan => FloatOp::MinNaN,
        Opcode::Max if nan => FloatOp::MaxNaN,
        Opcode::Min => FloatOp::Min,
        Opcode::Max => FloatOp::Max,
        Opcode::Abs => FloatOp::Abs,
        Opcode::Neg => FloatOp::Neg,
        Opcode::Copysign => FloatOp::Copysign,
        _ => return Err(frame.unsupported("this operation on floats")),
    };
    if inst.has_flag(Flag::Xorsign) {
        return Err(frame.unsupported("min/max .xorsign.abs"));
    }
    if is_f64 {
        Ok(Op::F64 { op, d, a, b, c })
    } else if mode.ftz {
        Ok(Op::F32Ftz { op, d, a, b })
    } else {
        Ok(Op::F32 { op, d, a, b, c })
    }
}
