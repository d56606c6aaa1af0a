//! The interpreter loop: runs one thread from its pc until it exits, reaches a barrier or a
//! warp-collective instruction, gives way at an mbarrier wait or a `nanosleep`, or faults.

use super::alu::{compare, f32_fast, f32_ftz, f64_fast, half_exec, int_op, testp};
use super::async_copy::PendingCopy;
use super::atomics::atom_apply;
use super::context::{cluster_base, CLUSTER_OFFSET};
use super::context::{effective, extend, le, put_le, Ctx};
use super::mbarrier::mbarrier;
use super::spaces::{from_generic, resolve_generic, to_generic};
use super::tensor_copy::tensor_copy;
use super::tensor_store::tensor_store;
use crate::error::Access;
use crate::numerics::{approx_f32, approx_f64, convert, f32_op, f64_op, pack_half2_from_f32, Half};
use crate::program::{BoolCombine, Op, Space, NO_SLOT};

/// Why a thread stopped with an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FaultKind {
    OutOfBounds {
        space: Space,
        access: Access,
        addr: u64,
        size: u32,
    },
    Misaligned {
        access: Access,
        addr: u64,
        size: u32,
    },
    Uninitialized {
        addr: u64,
    },
    Trap,
    Limit,
    /// A shared-memory access touching a byte another warp stored since the last barrier.
    SharedRace {
        addr: u64,
        other: usize,
        store: bool,
    },
    /// A form only known at run time to be unsupported (e.g. a descriptor's swizzle mode).
    Unsupported(&'static str),
    /// A `cp.async.bulk.tensor` whose tensor map or destination is unusable.
    TensorCopy(String),
    /// A `.shared::cluster` access to a rank outside the cluster, or to a CTA that has exited.
    Cluster(String),
    /// A shuffle whose source lane is not among the lanes taking part: outside the member
    /// mask, or absent from a partial warp.
    ShuffleSource {
        lane: u32,
        source: u32,
        members: u32,
        present: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    /// The instruction that faulted (a `cp.async` completes later than it issues).
    pub pc: u32,
}

/// Where a thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ready,
    /// Stopped at a `bar` or warp-collective instruction at its pc.
    Waiting,
    /// Gave way after an unsatisfied `mbarrier` wait or at a `nanosleep`, its pc past that
    /// instruction; runs again once another thread (of any block) has made progress.
    Yielded,
    Exited,
}

/// The per-thread state outside the register file.
#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub pc: u32,
    pub status: Status,
    pub carry: bool,
    pub executed: u64,
    pub(crate) pending: Vec<PendingCopy>,
    /// Id of the group `cp.async` adds to; committed groups have smaller ids.
    pub(crate) group: u32,
    /// Device-function calls in progress: return pc and call-site index.
    pub(crate) calls: Vec<(u32, u32)>,
    /// `ctx.progress` when this thread was last let go on after giving way (`u64::MAX`: not
    /// yet): one that gives way again with nothing changed since waits for progress.
    pub(crate) polled_at: u64,
    /// The cluster-barrier phase this thread's last `barrier.cluster.arrive` waits to see
    /// completed.
    pub(crate) cluster_phase: u64,
    /// Whether it has arrived at (or waits on) `cluster_phase` and not yet passed its wait.
    pub(crate) cluster_pending: bool,
}

impl Thread {
    pub(crate) fn new() -> Thread {
        Thread {
            pc: 0,
            status: Status::Ready,
            carry: false,
            executed: 0,
            pending: Vec::new(),
            group: 0,
            calls: Vec::new(),
            polled_at: u64::MAX,
            cluster_phase: 0,
            cluster_pending: false,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.pc = 0;
        self.status = Status::Ready;
        self.carry = false;
        self.executed = 0;
        self.pending.clear();
        self.group = 0;
        self.calls.clear();
        self.polled_at = u64::MAX;
        self.cluster_phase = 0;
        self.cluster_pending = false;
    }
}

/// Runs thread `t` until it stops; on return its status says why (or a fault is returned).
pub(crate) fn run(
    ctx: &mut Ctx<'_>,
    regs: &mut [u64],
    th: &mut Thread,
    t: usize,
) -> Result<(), Fault> {
    let code = &ctx.kernel.code[..];
    let mut pc = th.pc as usize;
    let mut executed = 0u64;
    macro_rules! r {
        ($s:expr) => {
            regs[$s as usize]
        };
    }
    let result = loop {
        let inst = &code[pc];
        executed += 1;
        if inst.guard != NO_SLOT && ((r!(inst.guard) != 0) == inst.negate) {
            pc += 1;
            continue;
        }
        let here = pc as u32;
        let fault = |kind| Fault { kind, pc: here };
        match inst.op {
            Op::Nop => {}
            Op::Mov { d, a } => r!(d) = r!(a),
            Op::Int {
                op,
                w,
                signed,
                d,
                a,
                b,
                c,
                e,
            } => {
                r!(d) = int_op(op, w, signed, r!(a), r!(b), r!(c), r!(e), &mut th.carry);
            }
            Op::Setp {
                cmp,
                ty,
                combine,
                c_negated,
                p,
                q,
                a,
                b,
                c,
            } => {
                let t = compare(cmp, ty, r!(a), r!(b));
                let cv = (r!(c) != 0) != c_negated;
                let f = |x: bool| match combine {
                    BoolCombine::And => x && cv,
                    BoolCombine::Or => x || cv,
                    BoolCombine::Xor => x != cv,
                };
                r!(p) = f(t) as u64;
                r!(q) = f(!t) as u64;
            }
            Op::Set {
                cmp,
                ty,
                float_result,
                d,
                a,
                b,
            } => {
                let t = compare(cmp, ty, r!(a), r!(b));
                r!(d) = match (t, float_result) {
                    (true, true) => 1.0f32.to_bits() as u64,
                    (true, false) => 0xffff_ffff,
                    (false, _) => 0,
                };
            }
            Op::Selp { d, a, b, p } => r!(d) = if r!(p) != 0 { r!(a) } else { r!(b) },
            Op::Slct {
                d,
                a,
                b,
                c,
                float_c,
            } => {
                let take_a = if float_c {
                    f32::from_bits(r!(c) as u32) >= 0.0
                } else {
                    r!(c) as i32 >= 0
                };
                r!(d) = if take_a { r!(a) } else { r!(b) };
            }
            Op::F32 { op, d, a, b, c } => r!(d) = f32_fast(op, r!(a), r!(b), r!(c)),
            Op::F32Ftz { op, d, a, b } => r!(d) = f32_ftz(op, r!(a), r!(b)),
            Op::F32Mode {
                op,
                mode,
                d,
                a,
                b,
                c,
            } => {
                let x = |s: u32| f32::from_bits(regs[s as usize] as u32);
                r!(d) = f32_op(op, mode, x(a), x(b), x(c)) as u64;
            }
            Op::F64 { op, d, a, b, c } => r!(d) = f64_fast(op, r!(a), r!(b), r!(c)),
            Op::F64Mode {
                op,
                mode,
                d,
                a,
                b,
                c,
            } => {
                let x = |s: u32| f64::from_bits(regs[s as usize]);
                r!(d) = f64_op(op, mode, x(a), x(b), x(c));
            }
            Op::Approx32 { func, ftz, d, a } => {
                r!(d) = approx_f32(func, ftz, f32::from_bits(r!(a) as u32)) as u64
            }
            Op::Approx64 { func, d, a } => r!(d) = approx_f64(func, f64::from_bits(r!(a))),
            Op::Half {
                kind,
                pairs,
                op,
                mode,
                d,
                a,
                b,
                c,
            } => {
                r!(d) = half_exec(kind, pairs, op, mode, r!(a), r!(b), r!(c));
            }
            Op::Testp { test, f64, d, a } => r!(d) = testp(test, f64, r!(a)) as u64,
            Op::Cvt {
                from,
                to,
                mode,
                d,
                a,
            } => r!(d) = convert(r!(a), from, to, mode),
            Op::CvtToFp8Pair {
                to,
                satfinite,
                relu,
                d,
                a,
                b,
            } => {
                let x = |s: u32| f32::from_bits(regs[s as usize] as u32) as f64;
                let hi = to.from_f64(x(a), satfinite, relu) as u64;
                let lo = to.from_f64(x(b), satfinite, relu) as u64;
                r!(d) = hi << 8 | lo;
            }
            Op::CvtHalf2ToFp8Pair {
                to,
                satfinite,
                relu,
                d,
                a,
            } => {
                let v = r!(a);
                let lane = |h: u64| to.from_f64(Half::F16.to_f64(h as u16), satfinite, relu) as u64;
                r!(d) = lane(v >> 16) << 8 | lane(v & 0xffff);
            }
            Op::CvtFp8PairToHalf2 { from, relu, d, a } => {
                let v = r!(a);
                let lane = |b: u64| {
                    let x = from.to_f64(b as u8);
                    let x = if relu && x < 0.0 { 0.0 } else { x };
                    Half::F16.from_f64(x, crate::numerics::Rounding::NearestEven) as u64
                };
                r!(d) = lane(v >> 8) << 16 | lane(v & 0xff);
            }
            Op::CvtPack { to, mode, d, a, b } => {
                r!(d) = pack_half2_from_f32(
                    f32::from_bits(r!(a) as u32),
                    f32::from_bits(r!(b) as u32),
                    to,
                    mode,
                ) as u64;
            }
            Op::Pack { d, parts, n, bits } => {
                let mask = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let mut v = 0u64;
                for i in (0..n as usize).rev() {
                    v = (v << bits) | (r!(parts[i]) & mask);
                }
                r!(d) = v;
            }
            Op::Unpack { s, parts, n, bits } => {
                let mask = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let v = r!(s);
                for (i, p) in parts.iter().take(n as usize).enumerate() {
                    r!(*p) = (v >> (i as u32 * bits as u32)) & mask;
                }
            }
            Op::Cvta {
                to_generic: true,
                space,
                d,
                a,
            } => r!(d) = to_generic(space, r!(a)),
            Op::Cvta {
                to_generic: false,
                space,
                d,
                a,
            } => r!(d) = from_generic(space, r!(a)),
            Op::Isspacep { space, d, a } => {
                let (s, _) = resolve_generic(r!(a));
                r!(d) = (s == space || (space == Space::Global && s == Space::Global)) as u64;
            }
            Op::Ld { at, elem, n, d } => {
                let addr = effective(regs, &at);
                // Fast path: an aligned scalar global load that hits a buffer.
                if n == 1 && at.space == Space::Global && addr & (elem.bytes as u64 - 1) == 0 {
                    if let Some(bytes) = ctx.global.bytes_mut(addr, elem.bytes as u64) {
                        r!(d[0]) = extend(le(bytes), elem);
                        pc += 1;
                        continue;
                    }
                }
                let total = elem.bytes as u32 * n as u32;
                match ctx.read(at.space, addr, total, t, Access::Load) {
                    Ok(bytes) => {
                        let eb = elem.bytes as usize;
                        for (i, dst) in d.iter().take(n as usize).enumerate() {
                            r!(*dst) = extend(le(&bytes[i * eb..(i + 1) * eb]), elem);
                        }
                    }
                    Err(kind) => break Err(fault(kind)),
                }
            }
            Op::St { at, elem, n, s } => {
                let addr = effective(regs, &at);
                if n == 1 && at.space == Space::Global && addr & (elem.bytes as u64 - 1) == 0 {
                    if let Some(bytes) = ctx.global.bytes_mut(addr, elem.bytes as u64) {
                        put_le(bytes, r!(s[0]));
                        ctx.progress += 1;
                        pc += 1;
                        continue;
                    }
                }
                let eb = elem.bytes as usize;
                let mut buf = [0u8; 16];
                for (i, src) in s.iter().take(n as usize).enumerate() {
                    buf[i * eb..(i + 1) * eb].copy_from_slice(&r!(*src).to_le_bytes()[..eb]);
                }
                if let Err(kind) = ctx.write(at.space, addr, &buf[..eb * n as usize], t) {
                    break Err(fault(kind));
                }
            }
            Op::LdParam { offset, elem, n, d } => {
                let eb = elem.bytes as usize;
                for (i, dst) in d.iter().take(n as usize).enumerate() {
                    let start = offset as usize + i * eb;
                    r!(*dst) = extend(le(&ctx.params[start..start + eb]), elem);
                }
            }
            Op::Atom {
                at,
                op,
                ty,
                d,
                b,
                c,
            } => {
                let addr = effective(regs, &at);
                let size = ty.bytes();
                let old = match ctx.read(at.space, addr, size, t, Access::Atomic) {
                    Ok(bytes) => le(&bytes[..size as usize]),
                    Err(kind) => break Err(fault(kind)),
                };
                let new = atom_apply(op, ty, old, r!(b), r!(c));
                if let Err(kind) = ctx.write_as(
                    at.space,
                    addr,
                    &new.to_le_bytes()[..size as usize],
                    t,
                    Access::Atomic,
                ) {
                    break Err(fault(kind));
                }
                r!(d) = old;
            }
            Op::Bra { target } => {
                pc = target as usize;
                if ctx.spent + executed > ctx.budget {
                    break Err(fault(FaultKind::Limit));
                }
                continue;
            }
            Op::Exit => {
                ctx.progress += 1;
                th.status = Status::Exited;
                ctx.cluster_exit();
                break ctx.complete_copies(th, t, u32::MAX);
            }
            Op::Ret => match th.calls.pop() {
                None => {
                    ctx.progress += 1;
                    th.status = Status::Exited;
                    ctx.cluster_exit();
                    break ctx.complete_copies(th, t, u32::MAX);
                }
                Some((back, site)) => {
                    ctx.copy_local(t, &ctx.kernel.calls[site as usize].rets);
                    pc = back as usize;
                    continue;
                }
            },
            Op::Call(site) => {
                let call = &ctx.kernel.calls[site as usize];
                ctx.copy_local(t, &call.args);
                th.calls.push((pc as u32 + 1, site));
                pc = call.target as usize;
                continue;
            }
            Op::Bar { .. } | Op::Collective(_) => {
                th.status = Status::Waiting;
                break Ok(());
            }
            Op::CpAsync {
                dst,
                src,
                bytes,
                src_bytes,
            } => {
                let daddr = effective(regs, &dst) & 0xffff_ffff;
                let saddr = effective(regs, &src);
                let sb = (r!(src_bytes) as u32).min(bytes as u32);
                if let Err(kind) =
                    ctx.check_range(Space::Shared, daddr, bytes as u32, t, Access::Store)
                {
                    break Err(fault(kind));
                }
                if sb > 0 {
                    if saddr & (bytes as u64 - 1) != 0 {
                        break Err(fault(FaultKind::Misaligned {
                            access: Access::Load,
                            addr: saddr,
                            size: bytes as u32,
                        }));
                    }
                    if let Err(kind) = ctx.check_range(Space::Global, saddr, sb, t, Access::Load) {
                        break Err(fault(kind));
                    }
                }
                th.pending.push(PendingCopy {
                    dst: daddr,
                    src: saddr,
                    bytes: bytes as u32,
                    src_bytes: sb,
                    group: th.group,
                    pc: pc as u32,
                });
            }
            Op::CpAsyncCommit => th.group += 1,
            Op::BulkCopy {
                dst,
                src,
                size,
                mbar,
            } => {
                let (to, from) = (effective(regs, &dst), effective(regs, &src));
                let bytes = r!(size) as u32;
                if !bytes.is_multiple_of(16) {
                    break Err(fault(FaultKind::Misaligned {
                        access: Access::Load,
                        addr: from,
                        size: bytes,
                    }));
                }
                let mut failed = None;
                for off in (0..bytes as u64).step_by(16) {
                    let chunk = match ctx.read(src.space, from + off, 16, t, Access::Load) {
                        Ok(c) => c,
                        Err(kind) => {
                            failed = Some(kind);
                            break;
                        }
                    };
                    if let Err(kind) = ctx.write(dst.space, to + off, &chunk, t) {
                        failed = Some(kind);
                        break;
                    }
                }
                if let Some(kind) = failed {
                    break Err(fault(kind));
                }
                if let Some(bar) = mbar {
                    let at = effective(regs, &bar);
                    let op = crate::program::MbarOp::CompleteTx;
                    if let Err(f) = mbarrier(ctx, th, t, op, bar.space, at, bytes as u64) {
                        break Err(Fault {
                            kind: f.kind,
                            pc: here,
                        });
                    }
                }
            }
            Op::TensorCopy(i) => {
                let kernel = ctx.kernel;
                let copy = &kernel.tensor_copies[i as usize];
                // The CTAs that receive the box: this one, or every rank in the multicast
                // mask, each at the same offsets in its own shared memory.
                let ranks: Vec<Option<u32>> = match copy.multicast {
                    None => vec![None],
                    Some(m) => {
                        let mask = r!(m) as u32 & 0xffff;
                        let size = ctx.cluster.size;
                        if mask >> size != 0 {
                            break Err(fault(FaultKind::Cluster(format!(
                                "the multicast CTA mask {mask:#06x} names ranks beyond the cluster's {size} CTAs"
                            ))));
                        }
                        (0..size).filter(|r| mask >> r & 1 == 1).map(Some).collect()
                    }
                };
                let mut failed = None;
                for rank in ranks {
                    let base = rank.map_or(0, cluster_base);
                    let bytes = match tensor_copy(ctx, regs, t, copy, base) {
                        Ok(bytes) => bytes,
                        Err(kind) => {
                            failed = Some(fault(kind));
                            break;
                        }
                    };
                    let mut at = effective(regs, &copy.mbar);
                    if rank.is_some() {
                        at = (at & CLUSTER_OFFSET) | base;
                    }
                    let op = crate::program::MbarOp::CompleteTx;
                    if let Err(f) = mbarrier(ctx, th, t, op, copy.mbar.space, at, bytes) {
                        failed = Some(fault(f.kind));
                        break;
                    }
                }
                if let Some(f) = failed {
                    break Err(f);
                }
            }
            Op::Mapa { d, a, rank } => {
                let rank = r!(rank) as u32;
                let size = ctx.cluster.size;
                if rank >= size {
                    break Err(fault(FaultKind::Cluster(format!(
                        "`mapa` to rank {rank}, but the cluster holds {size} CTAs"
                    ))));
                }
                r!(d) = (r!(a) & CLUSTER_OFFSET) | cluster_base(rank);
            }
            Op::ClusterBarrier { wait: false } => {
                th.cluster_phase = ctx.cluster.barrier.completed + 1;
                th.cluster_pending = true;
                ctx.cluster.barrier.arrived += 1;
                ctx.cluster_settle();
                ctx.progress += 1;
            }
            Op::ClusterBarrier { wait: true } => {
                if !th.cluster_pending {
                    // A wait with no arrival of its own waits for the phase in progress.
                    th.cluster_phase = ctx.cluster.barrier.completed + 1;
                    th.cluster_pending = true;
                }
                if ctx.cluster.barrier.completed >= th.cluster_phase {
                    th.cluster_pending = false;
                } else {
                    // Not every thread of the cluster has arrived: give way (other CTAs of the
                    // cluster run) and execute the wait again when something has changed.
                    th.status = Status::Yielded;
                    break Ok(());
                }
            }
            Op::TensorStore(i) => {
                let kernel = ctx.kernel;
                if let Err(kind) = tensor_store(ctx, regs, t, &kernel.tensor_stores[i as usize]) {
                    break Err(fault(kind));
                }
            }
            Op::CpAsyncWait { n } => {
                if let Err(f) = ctx.complete_copies(th, t, n) {
                    break Err(f);
                }
            }
            Op::Mbarrier { op, at, d, b } => {
                let addr = effective(regs, &at);
                match mbarrier(ctx, th, t, op, at.space, addr, r!(b)) {
                    Ok(Some(v)) => r!(d) = v,
                    Ok(None) => {
                        // An unsatisfied wait: answer "not yet" and let other threads run.
                        r!(d) = 0;
                        pc += 1;
                        th.status = Status::Yielded;
                        break Ok(());
                    }
                    Err(f) => {
                        break Err(Fault {
                            kind: f.kind,
                            pc: if f.pc == u32::MAX { here } else { f.pc },
                        })
                    }
                }
            }
            Op::Clock { d, wide } => {
                let now = th.executed + executed;
                r!(d) = if wide { now } else { now & 0xffff_ffff };
            }
            Op::Nanosleep => {
                // A spin-wait's pause: let other threads, and other blocks, run first.
                pc += 1;
                th.status = Status::Yielded;
                break Ok(());
            }
            Op::Trap => break Err(fault(FaultKind::Trap)),
        }
        pc += 1;
    };
    th.pc = pc as u32;
    th.executed += executed;
    ctx.spent += executed;
    result
}
