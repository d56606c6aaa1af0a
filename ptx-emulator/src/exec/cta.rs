//! Scheduling one CTA: threads run one at a time in a fixed order until they block; warp
//! collectives run when every lane in their member mask has reached them; a barrier opens when
//! every thread it waits for has arrived. A CTA whose only hope is a thread that gave way (an
//! mbarrier wait, a `nanosleep`) stalls, and the launch runs other CTAs before retrying it;
//! anything else is a deadlock, reported as an error.

use super::context::Ctx;
use super::report::{deadlock, fault_error, CtaShape};
use super::thread::{self, Fault, Status, Thread};
use super::warp::{self, Regs};
use super::wgmma;
use crate::error::Error;
use crate::program::{BarRedOp, Op, NO_SLOT};

/// Number of named barriers per CTA.
const BARRIERS: usize = 16;

/// How a run of a CTA ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every thread has exited.
    Done,
    /// Nothing can move until some other thread, of this CTA or another, makes progress: every
    /// thread not exited is blocked, and at least one of them gave way and polls again.
    Stalled,
}

/// What the scheduler of one CTA keeps between runs: arrivals at each named barrier.
pub(crate) struct Sched {
    arrived: [u32; BARRIERS],
}

impl Sched {
    pub(crate) fn new() -> Sched {
        Sched {
            arrived: [0; BARRIERS],
        }
    }
}

/// Runs the threads of one CTA until all have exited or it stalls; a CTA that stalled resumes
/// where it was when run again.
pub(crate) fn run_cta(
    ctx: &mut Ctx<'_>,
    regs: &mut [u64],
    threads: &mut [Thread],
    sched: &mut Sched,
    shape: &CtaShape,
) -> Result<Outcome, Error> {
    let n = threads.len();
    let slots = ctx.kernel.slots as usize;
    let warps = n.div_ceil(32);
    let arrived = &mut sched.arrived;
    loop {
        for w in 0..warps {
            let lanes = w * 32..(w * 32 + 32).min(n);
            loop {
                for t in lanes.clone() {
                    if threads[t].status == Status::Ready {
                        thread::run(
                            ctx,
                            &mut regs[t * slots..(t + 1) * slots],
                            &mut threads[t],
                            t,
                        )
                        .map_err(|f| fault_error(ctx, shape, t, f))?;
                    }
                }
                if !resolve_warp(ctx, regs, threads, w, arrived, shape)? {
                    break;
                }
            }
        }
        if threads.iter().all(|t| t.status == Status::Exited) {
            return Ok(Outcome::Done);
        }
        if resolve_warpgroups(ctx, regs, threads, shape)? {
            continue;
        }
        if release_barriers(ctx, regs, threads, arrived) {
            continue;
        }
        // A thread that gave way goes on unless it already has since the last progress: the
        // count may have moved in a pass that ended at a barrier or collective, and a thread
        // gets one turn even without progress, since what follows a `nanosleep` or a
        // `test_wait` need not be a loop back to the poll.
        let mut spinning = false;
        let mut woke = false;
        for th in threads.iter_mut().filter(|t| t.status == Status::Yielded) {
            spinning = true;
            if th.polled_at != ctx.progress {
                th.polled_at = ctx.progress;
                th.status = Status::Ready;
                woke = true;
            }
        }
        if woke {
            continue;
        }
        // Another CTA may still store what a spinner waits for; a CTA blocked only at barriers
        // and collectives cannot be helped from outside.
        if spinning {
            return Ok(Outcome::Stalled);
        }
        return Err(deadlock(ctx, regs, threads, shape));
    }
}

/// Handles `bar.arrive` and runs every warp collective whose participants are all present.
/// Returns whether any thread became ready.
fn resolve_warp(
    ctx: &mut Ctx<'_>,
    regs: &mut [u64],
    threads: &mut [Thread],
    w: usize,
    arrived: &mut [u32; BARRIERS],
    shape: &CtaShape,
) -> Result<bool, Error> {
    let n = threads.len();
    let slots = ctx.kernel.slots as usize;
    let base = w * 32;
    let lanes = base..(base + 32).min(n);
    let existing: u32 = if lanes.len() == 32 {
        u32::MAX
    } else {
        (1u32 << lanes.len()) - 1
    };
    let mut progress = false;
    for t in lanes.clone() {
        if threads[t].status != Status::Waiting {
            continue;
        }
        if let Op::Bar {
            arrive: true, id, ..
        } = ctx.kernel.code[threads[t].pc as usize].op
        {
            arrived[regs[t * slots + id as usize] as usize % BARRIERS] += 1;
            threads[t].pc += 1;
            threads[t].status = Status::Ready;
            progress = true;
        }
    }
    let mut handled = 0u32;
    for t in lanes.clone() {
        let lane = t - base;
        if threads[t].status != Status::Waiting || handled & (1 << lane) != 0 {
            continue;
        }
        let pc = threads[t].pc;
        let Op::Collective(ci) = ctx.kernel.code[pc as usize].op else {
            continue;
        };
        let kernel = ctx.kernel;
        let collective = &kernel.collectives[ci as usize];
        if collective.is_warpgroup() {
            continue;
        }
        let mask = collective
            .mask()
            .map_or(existing, |s| regs[t * slots + s as usize] as u32);
        if mask & !existing != 0 {
            return Err(Error::PartialWarpMask {
                site: shape.site(ctx, t, pc),
                warp: w as u32,
                mask,
                lanes: lanes.len() as u32,
            });
        }
        let mut mask = mask | (1 << lane);
        if matches!(collective, crate::program::Collective::Activemask { .. }) {
            // The lanes that arrived here together: every lane has stopped by now, so those
            // waiting at this instruction are the ones that took this path.
            mask = (0..32)
                .filter(|&l| {
                    base + l < n
                        && threads[base + l].status == Status::Waiting
                        && threads[base + l].pc == pc
                })
                .fold(0, |m, l| m | 1 << l);
        }
        let mut ready = true;
        for l in 0..32 {
            if mask & (1 << l) == 0 {
                continue;
            }
            let u = base + l;
            match threads[u].status {
                Status::Exited => {
                    return Err(Error::CollectiveDivergence {
                        site: shape.site(ctx, t, pc),
                        detail: format!(
                        "lane {l} (thread {}) is in the member mask {mask:#010x} but has exited",
                        shape.tid_text(u)
                    ),
                    })
                }
                Status::Waiting if threads[u].pc == pc => {}
                _ => ready = false,
            }
        }
        if !ready {
            continue;
        }
        let mut members = [0usize; 32];
        let mut count = 0;
        for l in 0..32 {
            if mask & (1 << l) != 0 {
                members[count] = base + l;
                count += 1;
            }
        }
        let participants = &members[..count];
        let mut file = Regs { all: regs, slots };
        warp::execute(collective, participants, base, &mut file, ctx)
            .map_err(|(u, kind)| fault_error(ctx, shape, u, Fault { kind, pc }))?;
        for &u in participants {
            threads[u].pc += 1;
            threads[u].status = Status::Ready;
        }
        handled |= mask;
        progress = true;
        ctx.progress += 1;
    }
    Ok(progress)
}

/// Runs every warpgroup instruction (`wgmma`) that all threads of its warpgroup have reached.
/// Returns whether one ran.
fn resolve_warpgroups(
    ctx: &mut Ctx<'_>,
    regs: &mut [u64],
    threads: &mut [Thread],
    shape: &CtaShape,
) -> Result<bool, Error> {
    let slots = ctx.kernel.slots as usize;
    let n = threads.len();
    let mut ran = false;
    for base in (0..n).step_by(128) {
        let members: Vec<usize> = (base..(base + 128).min(n)).collect();
        let Some(&first) = members.iter().find(|&&t| {
            threads[t].status == Status::Waiting
                && matches!(ctx.kernel.code[threads[t].pc as usize].op, Op::Collective(ci)
                    if ctx.kernel.collectives[ci as usize].is_warpgroup())
        }) else {
            continue;
        };
        let pc = threads[first].pc;
        if let Some(&gone) = members
            .iter()
            .find(|&&t| threads[t].status == Status::Exited)
        {
            return Err(Error::CollectiveDivergence {
                site: shape.site(ctx, first, pc),
                detail: format!(
                    "thread {} of the warpgroup has exited",
                    shape.tid_text(gone)
                ),
            });
        }
        if !members
            .iter()
            .all(|&t| threads[t].status == Status::Waiting && threads[t].pc == pc)
        {
            continue;
        }
        let Op::Collective(ci) = ctx.kernel.code[pc as usize].op else {
            continue;
        };
        let kernel = ctx.kernel;
        let mut file = Regs { all: regs, slots };
        wgmma::execute(
            &kernel.collectives[ci as usize],
            &members,
            base,
            &mut file,
            ctx,
        )
        .map_err(|(u, kind)| fault_error(ctx, shape, u, Fault { kind, pc }))?;
        for &t in &members {
            threads[t].pc += 1;
            threads[t].status = Status::Ready;
        }
        ctx.progress += 1;
        ran = true;
    }
    Ok(ran)
}

/// Opens every barrier whose expected threads have all arrived. Returns whether one opened.
fn release_barriers(
    ctx: &mut Ctx<'_>,
    regs: &mut [u64],
    threads: &mut [Thread],
    arrived: &mut [u32; BARRIERS],
) -> bool {
    let slots = ctx.kernel.slots as usize;
    let n = threads.len();
    let mut waiters: [Vec<usize>; BARRIERS] = Default::default();
    let mut expected = [n as u32; BARRIERS];
    for (t, th) in threads.iter().enumerate() {
        if th.status != Status::Waiting {
            continue;
        }
        if let Op::Bar {
            arrive: false,
            id,
            count,
            ..
        } = ctx.kernel.code[th.pc as usize].op
        {
            let id = regs[t * slots + id as usize] as usize % BARRIERS;
            if count != NO_SLOT {
                expected[id] = regs[t * slots + count as usize] as u32;
            }
            waiters[id].push(t);
        }
    }
    let mut released = false;
    for id in 0..BARRIERS {
        if waiters[id].is_empty() || (waiters[id].len() as u32 + arrived[id]) < expected[id] {
            continue;
        }
        bar_reduce(ctx, regs, threads, &waiters[id]);
        for &t in &waiters[id] {
            threads[t].pc += 1;
            threads[t].status = Status::Ready;
        }
        arrived[id] = 0;
        released = true;
        ctx.shared.epoch += 1;
    }
    released
}

/// For `bar.red`: reduces the releasing threads' predicates and gives each its result.
fn bar_reduce(ctx: &Ctx<'_>, regs: &mut [u64], threads: &[Thread], waiters: &[usize]) {
    let slots = ctx.kernel.slots as usize;
    let red_of = |t: usize| match ctx.kernel.code[threads[t].pc as usize].op {
        Op::Bar { red, .. } if red != NO_SLOT => Some(ctx.kernel.bar_reds[red as usize]),
        _ => None,
    };
    let Some(first) = waiters.iter().find_map(|&t| red_of(t)) else {
        return;
    };
    let value = |t: usize| match red_of(t) {
        Some(r) => (regs[t * slots + r.c as usize] != 0) != r.negated,
        None => false,
    };
    let count = waiters.iter().filter(|&&t| value(t)).count() as u64;
    let result = match first.op {
        BarRedOp::Popc => count,
        BarRedOp::And => (count == waiters.len() as u64) as u64,
        BarRedOp::Or => (count > 0) as u64,
    };
    for &t in waiters {
        if let Some(r) = red_of(t) {
            regs[t * slots + r.d as usize] = result;
        }
    }
}
