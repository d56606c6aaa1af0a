//! Control flow and barriers: `bra`, `ret`, `exit`, `trap`, `bar`/`barrier` (with `.red`),
//! and device-function `call`s.

use super::operands::{Frame, Kind};
use super::suffix::operands;
use crate::error::Error;
use crate::program::{BarRed, BarRedOp, CallSite, Op, NO_SLOT, W};
use ptx_parser::{AtomicOp, Flag, Instruction, Modifier, Opcode, Operand};

pub(crate) fn control(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    match inst.opcode {
        Opcode::Bra => {
            let ops = operands(frame, inst, 1)?;
            let name = match &ops[0] {
                Operand::Label(n) | Operand::Symbol(n) => n,
                other => return Err(frame.unsupported(format!("indirect branch to {other:?}"))),
            };
            let target = frame.label(name).ok_or_else(|| {
                frame.malformed(format!("label `{name}` is not defined in this kernel"))
            })?;
            Ok(Op::Bra { target })
        }
        Opcode::Ret => Ok(Op::Ret),
        Opcode::Exit => Ok(Op::Exit),
        Opcode::Trap => Ok(Op::Trap),
        Opcode::Barrier
            if inst
                .modifiers
                .iter()
                .any(|m| matches!(m, Modifier::Scope(ptx_parser::Scope::Cluster))) =>
        {
            // barrier.cluster.arrive{.release}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}
            if !inst.operands.is_empty() {
                return Err(frame.malformed("`barrier.cluster` takes no operands"));
            }
            Ok(Op::ClusterBarrier {
                wait: !inst.has_flag(Flag::Arrive),
            })
        }
        Opcode::Bar | Opcode::Barrier => {
            let arrive = inst.has_flag(Flag::Arrive);
            if inst.has_flag(Flag::Red) {
                // bar.red.op.type d, id{, count}, {!}p
                let ops = operands(frame, inst, 3)?;
                let op = match inst.modifiers.iter().find_map(|m| match m {
                    Modifier::Atomic(a) => Some(*a),
                    _ => None,
                }) {
                    Some(AtomicOp::Popc) => BarRedOp::Popc,
                    Some(AtomicOp::And) => BarRedOp::And,
                    Some(AtomicOp::Or) => BarRedOp::Or,
                    _ => return Err(frame.malformed("bar.red needs .popc, .and or .or")),
                };
                let d = frame.dst(&ops[0])?;
                let id = frame.src(&ops[1], Kind::Int(W::B32))?;
                let count = if ops.len() == 4 {
                    frame.src(&ops[2], Kind::Int(W::B32))?
                } else {
                    NO_SLOT
                };
                let (c, negated) = frame.pred(&ops[ops.len() - 1])?;
                frame.bar_reds.push(BarRed { op, d, c, negated });
                let red = frame.bar_reds.len() as u32 - 1;
                return Ok(Op::Bar {
                    arrive: false,
                    id,
                    count,
                    red,
                });
            }
            let id = match inst.operands.first() {
                Some(op) => frame.src(op, Kind::Int(W::B32))?,
                None => frame.konst(0),
            };
            let count = match inst.operands.get(1) {
                Some(op) => frame.src(op, Kind::Int(W::B32))?,
                None => NO_SLOT,
            };
            Ok(Op::Bar {
                arrive,
                id,
                count,
                red: NO_SLOT,
            })
        }
        _ => Err(frame.unsupported("")),
    }
}

/// `call{.uni} (ret), f, (args);`: copies each argument variable into `f`'s parameters,
/// jumps, and on return copies `f`'s return values into the `ret` variables.
pub(crate) fn call(
    frame: &mut Frame,
    inst: &Instruction,
    calls: &mut Vec<CallSite>,
) -> Result<Op, Error> {
    let mut ops = inst.operands.iter();
    let mut rets: &[Operand] = &[];
    let mut first = ops.next();
    if let Some(Operand::List(r)) = first {
        rets = r;
        first = ops.next();
    }
    let name = match first {
        Some(Operand::Symbol(n)) | Some(Operand::Label(n)) => n.clone(),
        other => return Err(frame.unsupported(format!("indirect call through {other:?}"))),
    };
    let args: &[Operand] = match ops.next() {
        Some(Operand::List(a)) => a,
        None => &[],
        Some(other) => return Err(frame.unsupported(format!("call argument {other:?}"))),
    };
    if ops.next().is_some() {
        return Err(frame.unsupported("calls with a prototype (indirect calls)"));
    }
    if name == frame.function {
        return Err(frame.unsupported(format!("recursive call of `{name}`")));
    }
    let target = *frame.functions.get(&name).ok_or_else(|| {
        frame.unsupported(format!(
            "call of `{name}`, which has no body in this module"
        ))
    })?;
    let callee = frame.callee_params.get(&name).cloned().unwrap_or_default();
    let local = |frame: &Frame, op: &Operand| -> Result<(u32, u32), Error> {
        match op {
            Operand::Symbol(n) => frame
                .local_var(n)
                .ok_or_else(|| frame.unsupported(format!("call operand `{n}`"))),
            other => {
                Err(frame.unsupported(format!("call operand {other:?} (only .param variables)")))
            }
        }
    };
    let mut site = CallSite {
        target,
        args: Vec::new(),
        rets: Vec::new(),
    };
    for (op, (dst, size)) in args.iter().zip(&callee.params) {
        let (src, bytes) = local(frame, op)?;
        site.args.push((src, *dst, bytes.min(*size)));
    }
    for (op, (src, size)) in rets.iter().zip(&callee.returns) {
        let (dst, bytes) = local(frame, op)?;
        site.rets.push((*src, dst, bytes.min(*size)));
    }
    calls.push(site);
    Ok(Op::Call(calls.len() as u32 - 1))
}
