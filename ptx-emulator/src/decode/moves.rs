//! `mov`: copies, packing `{a, b}` and unpacking, and clock reads.

use super::operands::{Frame, Kind};
use super::suffix::{kind_of, main_class, operands, Class};
use crate::error::Error;
use crate::program::{Op, W};
use ptx_parser::{Instruction, Operand, SpecialReg, SpecialScalar};

pub(crate) fn mov(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let bits_total = match class {
        Class::Int { w, .. } => w.bits(),
        Class::F32 => 32,
        Class::F64 => 64,
        Class::Pred => 1,
        Class::Half { pairs, .. } => {
            if pairs {
                32
            } else {
                16
            }
        }
    };
    match (&ops[0], &ops[1]) {
        (Operand::Vector(parts), src) => {
            let n = parts.len();
            if !(2..=4).contains(&n) {
                return Err(frame.malformed("a vector must have 2 to 4 parts"));
            }
            let s = frame.src(src, Kind::Int(W::B64))?;
            let mut regs = [0; 4];
            for (r, p) in regs.iter_mut().zip(parts) {
                *r = frame.dst(p)?;
            }
            Ok(Op::Unpack {
                s,
                parts: regs,
                n: n as u8,
                bits: (bits_total / n as u32) as u8,
            })
        }
        (d, Operand::Vector(parts)) => {
            let n = parts.len();
            if !(2..=4).contains(&n) {
                return Err(frame.malformed("a vector must have 2 to 4 parts"));
            }
            let bits = bits_total / n as u32;
            let w = match bits {
                8 => W::B8,
                16 => W::B16,
                32 => W::B32,
                _ => W::B64,
            };
            let mut regs = [0; 4];
            for (r, p) in regs.iter_mut().zip(parts) {
                *r = frame.src(p, Kind::Int(w))?;
            }
            Ok(Op::Pack {
                d: frame.dst(d)?,
                parts: regs,
                n: n as u8,
                bits: bits as u8,
            })
        }
        (d, Operand::Special(SpecialReg::Scalar(s))) if is_clock(*s) => {
            let wide = matches!(s, SpecialScalar::Clock64 | SpecialScalar::Globaltimer);
            Ok(Op::Clock {
                d: frame.dst(d)?,
                wide,
            })
        }
        (d, a) => {
            let a = frame.src(a, kind_of(class))?;
            Ok(Op::Mov {
                d: frame.dst(d)?,
                a,
            })
        }
    }
}

fn is_clock(s: SpecialScalar) -> bool {
    matches!(
        s,
        SpecialScalar::Clock
            | SpecialScalar::ClockHi
            | SpecialScalar::Clock64
            | SpecialScalar::Globaltimer
            | SpecialScalar::GlobaltimerLo
            | SpecialScalar::GlobaltimerHi
    )
}
