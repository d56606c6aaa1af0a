//! Turning faults and deadlocks into the errors a user reads: which kernel, CTA, thread and
//! instruction, and what the other threads were doing.

use super::context::Ctx;
use super::thread::{Fault, FaultKind, Status, Thread};
use crate::error::{Error, Nearest, Site};
use crate::program::{Op, Space, NO_SLOT};

/// The shape of the CTA being run, for naming threads in errors.
pub(crate) struct CtaShape {
    pub block: [u32; 3],
    pub dims: [u32; 3],
}

impl CtaShape {
    pub(crate) fn tid(&self, t: usize) -> [u32; 3] {
        let [bx, by, _] = self.dims;
        let t = t as u32;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    /// `(x, y, z)` of thread `t`, as people write it.
    pub(crate) fn tid_text(&self, t: usize) -> String {
        let [x, y, z] = self.tid(t);
        format!("({x}, {y}, {z})")
    }

    /// Boxed: every error carries one, and errors travel through every decode result.
    pub(crate) fn site(&self, ctx: &Ctx<'_>, t: usize, pc: u32) -> Box<Site> {
        Box::new(Site {
            kernel: ctx.kernel.name.clone(),
            block: self.block,
            thread: self.tid(t),
            instruction: ctx
                .kernel
                .text
                .get(pc as usize)
                .cloned()
                .unwrap_or_default(),
            source: ctx
                .kernel
                .source
                .get(pc as usize)
                .cloned()
                .flatten()
                .map(|s| Box::new(crate::error::SourceLine(s))),
        })
    }
}

/// Explains why no thread can make progress.
pub(crate) fn deadlock(ctx: &Ctx<'_>, regs: &[u64], threads: &[Thread], shape: &CtaShape) -> Error {
    let slots = ctx.kernel.slots as usize;
    let n = threads.len();
    let at_barrier = |t: usize| {
        threads[t].status == Status::Waiting
            && matches!(
                ctx.kernel.code[threads[t].pc as usize].op,
                Op::Bar { arrive: false, .. }
            )
    };
    let first_at_barrier = (0..n).find_map(|t| match ctx.kernel.code[threads[t].pc as usize].op {
        Op::Bar {
            arrive: false,
            id,
            count,
            ..
        } if threads[t].status == Status::Waiting => Some((t, id, count)),
        _ => None,
    });
    if let Some((first, id, count)) = first_at_barrier {
        let id_value = regs[first * slots + id as usize];
        let waiting = (0..n).filter(|&t| at_barrier(t)).count() as u32;
        let expected = if count == NO_SLOT {
            n as u32
        } else {
            regs[first * slots + count as usize] as u32
        };
        let exited: Vec<usize> = (0..n)
            .filter(|&t| threads[t].status == Status::Exited)
            .collect();
        let elsewhere: Vec<usize> = (0..n)
            .filter(|&t| {
                (threads[t].status == Status::Waiting && !at_barrier(t))
                    || threads[t].status == Status::Yielded
            })
            .collect();
        let mut parts = Vec::new();
        if !exited.is_empty() {
            parts.push(format!(
                "{} threads have exited without reaching it (first: thread {})",
                exited.len(),
                shape.tid_text(exited[0])
            ));
        }
        if let Some(&t) = elsewhere.first() {
            parts.push(format!(
                "{} threads are stuck elsewhere (first: thread {} at `{}`)",
                elsewhere.len(),
                shape.tid_text(t),
                ctx.kernel.text[threads[t].pc as usize]
            ));
        }
        if parts.is_empty() {
            parts.push(format!(
                "only {waiting} threads take part in barrier {id_value}"
            ));
        }
        return Error::BarrierDivergence {
            kernel: ctx.kernel.name.clone(),
            block: shape.block,
            instruction: ctx.kernel.text[threads[first].pc as usize].clone(),
            origin: ctx
                .kernel
                .source
                .get(threads[first].pc as usize)
                .cloned()
                .flatten()
                .map(|s| Box::new(crate::error::SourceLine(s))),
            waiting,
            expected,
            detail: parts.join("; "),
        };
    }
    if let Some(spinner) = (0..n).find(|&t| threads[t].status == Status::Yielded) {
        let waiting = threads
            .iter()
            .filter(|t| t.status == Status::Yielded)
            .count() as u32;
        // The yielded thread's pc is past its wait instruction, but at a cluster barrier's
        // wait, which runs again when it resumes.
        let at = threads[spinner].pc;
        let pc = match ctx.kernel.code.get(at as usize).map(|i| &i.op) {
            Some(crate::program::Op::ClusterBarrier { wait: true }) => at,
            _ => at.saturating_sub(1),
        };
        return Error::SpinDeadlock {
            site: shape.site(ctx, spinner, pc),
            waiting,
            detail: describe_others(ctx, threads, shape),
        };
    }
    let first = (0..n)
        .find(|&t| threads[t].status == Status::Waiting)
        .unwrap_or(0);
    let pc = threads[first].pc;
    let base = first / 32 * 32;
    let other = (base..(base + 32).min(n))
        .find(|&u| threads[u].status == Status::Waiting && threads[u].pc != pc);
    let detail = match other {
        Some(u) => format!(
            "lane {} waits at `{}` instead",
            u - base,
            ctx.kernel.text[threads[u].pc as usize]
        ),
        None => "some lanes of the member mask never arrive".to_string(),
    };
    Error::CollectiveDivergence {
        site: shape.site(ctx, first, pc),
        detail,
    }
}

/// Where the threads that are not spinning are: exited, or waiting at which instruction.
fn describe_others(ctx: &Ctx<'_>, threads: &[Thread], shape: &CtaShape) -> String {
    let exited = threads
        .iter()
        .filter(|t| t.status == Status::Exited)
        .count();
    let waiting = threads.iter().position(|t| t.status == Status::Waiting);
    let mut parts = vec![format!("{exited} threads have exited")];
    if let Some(t) = waiting {
        parts.push(format!(
            "thread {} waits at `{}`",
            shape.tid_text(t),
            ctx.kernel.text[threads[t].pc as usize]
        ));
    }
    parts.join("; ")
}

/// Turns a thread's fault into the error a user reads.
pub(crate) fn fault_error(ctx: &Ctx<'_>, shape: &CtaShape, t: usize, fault: Fault) -> Error {
    let site = shape.site(ctx, t, fault.pc);
    match fault.kind {
        FaultKind::OutOfBounds {
            space,
            access,
            addr,
            size,
        } => match space {
            Space::Shared => Error::SharedOutOfBounds {
                site,
                access,
                address: addr,
                size,
                shared_bytes: ctx.shared.bytes.len() as u32,
                symbol: shared_symbol(ctx, addr),
            },
            Space::Local => Error::LocalOutOfBounds {
                site,
                access,
                address: addr,
                size,
                local_bytes: ctx.kernel.local_bytes,
            },
            Space::Const | Space::Param => Error::GlobalOutOfBounds {
                site,
                access,
                address: addr,
                size,
                nearest: Nearest::Nothing,
            },
            Space::Global | Space::Generic => match ctx.global.view_fault(addr) {
                Some(view) => Error::ViewOutOfBounds {
                    site,
                    access,
                    address: addr,
                    size,
                    view,
                },
                None => Error::GlobalOutOfBounds {
                    site,
                    access,
                    address: addr,
                    size,
                    nearest: ctx.global.nearest(addr),
                },
            },
        },
        FaultKind::Misaligned { access, addr, size } => Error::Misaligned {
            site,
            access,
            address: addr,
            size,
        },
        FaultKind::Uninitialized { addr } => Error::UninitializedShared {
            site,
            address: addr,
            symbol: shared_symbol(ctx, addr),
        },
        FaultKind::Trap => Error::Trap { site },
        FaultKind::SharedRace { addr, other, store } => Error::SharedRace {
            site,
            access: if store {
                crate::error::Access::Store
            } else {
                crate::error::Access::Load
            },
            address: addr,
            symbol: shared_symbol(ctx, addr),
            other: shape.tid(other),
        },
        FaultKind::Unsupported(what) => Error::Unsupported {
            kernel: ctx.kernel.name.clone(),
            opcode: site
                .instruction
                .split(['.', ' '])
                .next()
                .unwrap_or_default()
                .to_string(),
            instruction: site.instruction,
            detail: format!(" ({what})"),
        },
        FaultKind::TensorCopy(detail) => Error::TensorCopy { site, detail },
        FaultKind::Cluster(detail) => Error::Cluster { site, detail },
        FaultKind::ShuffleSource {
            lane,
            source,
            members,
            present,
        } => Error::ShuffleSource {
            site,
            lane,
            from: source,
            members,
            present,
        },
        FaultKind::Limit => Error::StepBudget {
            site,
            budget: ctx.budget,
        },
    }
}

/// " (in `tile` at offset 12)" for the shared variable holding `addr`, or the nearest one below.
fn shared_symbol(ctx: &Ctx<'_>, addr: u64) -> String {
    let sym = ctx
        .kernel
        .shared_symbols
        .iter()
        .filter(|s| s.offset as u64 <= addr)
        .max_by_key(|s| s.offset);
    match sym {
        Some(s) => {
            let inside = s.bytes.is_none_or(|b| addr < s.offset as u64 + b as u64);
            let rel = addr - s.offset as u64;
            if inside {
                format!(" (in `{}` at byte offset {rel})", s.name)
            } else {
                format!(" (past the end of `{}`, byte offset {rel})", s.name)
            }
        }
        None => String::new(),
    }
}
