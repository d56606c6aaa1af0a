//! Transcendentals (`ex2`, `lg2`, `rsqrt`, `rcp`, `sqrt`, `sin`, `cos`, `tanh`) and `testp`.

use super::operands::Frame;
use super::suffix::{float_mode, kind_of, main_class, operands, other_word, Class};
use crate::error::Error;
use crate::numerics::{Approx, RoundedOp};
use crate::program::{HalfOp, Op, Testp};
use ptx_parser::{Flag, Instruction, Opcode};

pub(crate) fn transcendental(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], kind_of(class))?;
    let approx = inst.has_flag(Flag::Approx);
    let func = match inst.opcode {
        Opcode::Ex2 => Approx::Ex2,
        Opcode::Lg2 => Approx::Lg2,
        Opcode::Rsqrt => Approx::Rsqrt,
        Opcode::Rcp => Approx::Rcp,
        Opcode::Sqrt => Approx::Sqrt,
        Opcode::Sin => Approx::Sin,
        Opcode::Cos => Approx::Cos,
        _ => Approx::Tanh,
    };
    let mode = float_mode(frame, inst)?;
    match class {
        Class::F32 if approx => Ok(Op::Approx32 {
            func,
            ftz: mode.ftz,
            d,
            a,
        }),
        Class::F32 => {
            let op = match func {
                Approx::Sqrt => RoundedOp::Sqrt,
                Approx::Rcp => RoundedOp::Rcp,
                _ => return Err(frame.malformed("this function exists only as .approx")),
            };
            let zero = frame.konst(0);
            Ok(Op::F32Mode {
                op,
                mode,
                d,
                a,
                b: zero,
                c: zero,
            })
        }
        Class::F64 if approx => Ok(Op::Approx64 { func, d, a }),
        Class::F64 => {
            let op = match func {
                Approx::Sqrt => RoundedOp::Sqrt,
                Approx::Rcp => RoundedOp::Rcp,
                _ => return Err(frame.malformed("this function exists only as .approx")),
            };
            let zero = frame.konst(0);
            Ok(Op::F64Mode {
                op,
                mode,
                d,
                a,
                b: zero,
                c: zero,
            })
        }
        Class::Half { kind, pairs } => {
            let op = match func {
                Approx::Ex2 => HalfOp::Ex2,
                Approx::Tanh => HalfOp::Tanh,
                _ => return Err(frame.unsupported("this function on f16/bf16")),
            };
            Ok(Op::Half {
                kind,
                pairs,
                op,
                mode,
                d,
                a,
                b: a,
                c: a,
            })
        }
        _ => Err(frame.unsupported("this type")),
    }
}

pub(crate) fn testp(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let test = match other_word(inst) {
        Some("finite") => Testp::Finite,
        Some("infinite") => Testp::Infinite,
        Some("number") => Testp::Number,
        Some("notanumber") => Testp::NotANumber,
        Some("normal") => Testp::Normal,
        Some("subnormal") => Testp::Subnormal,
        _ => return Err(frame.unsupported("testp mode")),
    };
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], kind_of(class))?;
    Ok(Op::Testp {
        test,
        f64: class == Class::F64,
        d,
        a,
    })
}
