//! PTX text of one instruction, for error messages.

use ptx_parser::{Instruction, Operand};
use std::fmt::Write;

pub(crate) fn instruction_text(inst: &Instruction) -> String {
    let mut s = String::new();
    if let Some(g) = &inst.guard {
        let _ = write!(s, "@{}{} ", if g.negated { "!" } else { "" }, g.reg);
    }
    s.push_str(inst.opcode.as_str());
    for m in &inst.modifiers {
        let _ = write!(s, ".{m}");
    }
    for (i, op) in inst.operands.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        operand_text(&mut s, op);
    }
    s.push(';');
    s
}

fn operand_text(s: &mut String, op: &Operand) {
    match op {
        Operand::Reg(r) | Operand::Symbol(r) | Operand::Label(r) => s.push_str(r),
        Operand::Special(r) => {
            let _ = write!(s, "{r}");
        }
        Operand::Imm(i) => {
            let _ = write!(s, "{i}");
        }
        Operand::Address(a) => {
            let _ = write!(s, "{a}");
        }
        Operand::Vector(v) | Operand::List(v) => {
            let (open, close) = if matches!(op, Operand::Vector(_)) {
                ('{', '}')
            } else {
                ('(', ')')
            };
            s.push(open);
            for (i, o) in v.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                operand_text(s, o);
            }
            s.push(close);
        }
        Operand::Sink => s.push('_'),
        Operand::Not(inner) => {
            s.push('!');
            operand_text(s, inner);
        }
        Operand::PredPair(a, b) => {
            let _ = write!(s, "{a}|{b}");
        }
        Operand::TensorCoords { .. } => {
            let _ = write!(s, "{op}");
        }
    }
}
