//! Logic and bit manipulation: `and`/`or`/`xor`/`not`/`cnot`, shifts, `popc`, `clz`, `brev`,
//! `bfe`, `bfi`, `bfind`, `prmt`, `lop3`, `shf`, `dp4a`.

use super::arith::srcs;
use super::operands::{Frame, Kind};
use super::suffix::{main_class, operands, other_word, types, Class};
use crate::error::Error;
use crate::numerics::PrmtMode;
use crate::program::{IntOp, Op, W};
use ptx_parser::{Flag, Instruction, Opcode, Type};

pub(crate) fn bits(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let tys = types(inst);
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    let (w, signed) = match class {
        Class::Int { w, signed } => (w, signed),
        Class::Pred => (W::B32, false),
        Class::F32 | Class::Half { .. } => (W::B32, false),
        Class::F64 => (W::B64, false),
    };
    let k = Kind::Int(w);
    let u32k = Kind::Int(W::B32);
    let op = match inst.opcode {
        Opcode::Not if class == Class::Pred => IntOp::PredNot,
        Opcode::And => IntOp::And,
        Opcode::Or => IntOp::Or,
        Opcode::Xor => IntOp::Xor,
        Opcode::Not => IntOp::Not,
        Opcode::Cnot => IntOp::Cnot,
        Opcode::Shl => IntOp::Shl,
        Opcode::Shr => IntOp::Shr,
        Opcode::Popc => IntOp::Popc,
        Opcode::Clz => IntOp::Clz,
        Opcode::Brev => IntOp::Brev,
        Opcode::Bfe => IntOp::Bfe,
        Opcode::Bfi => IntOp::Bfi,
        Opcode::Bfind => IntOp::Bfind {
            shift_amount: inst.has_flag(Flag::Shiftamt),
        },
        Opcode::Prmt => IntOp::Prmt(match other_word(inst) {
            None => PrmtMode::Generic,
            Some("f4e") => PrmtMode::F4e,
            Some("b4e") => PrmtMode::B4e,
            Some("rc8") => PrmtMode::Rc8,
            Some("ecl") => PrmtMode::Ecl,
            Some("ecr") => PrmtMode::Ecr,
            Some("rc16") => PrmtMode::Rc16,
            Some(other) => return Err(frame.unsupported(format!("prmt mode .{other}"))),
        }),
        Opcode::Lop3 => IntOp::Lop3,
        Opcode::Shf => IntOp::Shf {
            left: inst.has_flag(Flag::L),
            clamp: inst.has_flag(Flag::Clamp),
        },
        Opcode::Dp4a => {
            let a_signed = tys.first() == Some(&Type::S32);
            let b_signed = tys.get(1) == Some(&Type::S32);
            IntOp::Dp4a { a_signed, b_signed }
        }
        _ => return Err(frame.unsupported("")),
    };
    let kinds = match op {
        IntOp::Shl | IntOp::Shr => [k, u32k, u32k],
        IntOp::Bfe => [k, u32k, u32k],
        IntOp::Bfi => [k, k, u32k],
        _ => [k, k, k],
    };
    let [a, b, c] = srcs(frame, ops, kinds)?;
    let e = match ops.get(4) {
        Some(op) => frame.src(op, u32k)?,
        None => frame.konst(0),
    };
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
