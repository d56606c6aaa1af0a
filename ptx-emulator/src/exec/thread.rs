//! The interpreter loop: runs one thread from its pc until it exits, reaches a barrier or a
//! warp-collective instruction, or faults.

use super::alu::{compare, f32_fast, f32_ftz, f64_fast, half_exec, int_op, testp};
use super::spaces::{from_generic, resolve_generic, to_generic, SharedMem};
use crate::error::Access;
use crate::memory::GlobalMemory;
use crate::numerics::{
    approx_f32, approx_f64, convert, f32_op, f64_op, flush_f32, half_op, pack_half2_from_f32,
    FloatMode, Half, RoundedOp,
};
use crate::program::{AtomOp, AtomTy, BoolCombine, Elem, Kernel, MemRef, Op, Space, NO_SLOT};

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
    /// Gave way after an unsatisfied `mbarrier` wait; runs again once another thread has made
    /// progress.
    Yielded,
    Exited,
}

/// A `cp.async` issued but not yet complete.
#[derive(Debug, Clone)]
pub(crate) struct PendingCopy {
    dst: u64,
    src: u64,
    bytes: u32,
    src_bytes: u32,
    group: u32,
    pc: u32,
}

/// The per-thread state outside the register file.
#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub pc: u32,
    pub status: Status,
    pub carry: bool,
    pub executed: u64,
    pending: Vec<PendingCopy>,
    /// Id of the group `cp.async` adds to; committed groups have smaller ids.
    group: u32,
    /// Device-function calls in progress: return pc and call-site index.
    calls: Vec<(u32, u32)>,
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
    }
}

/// What a running thread can reach.
pub(crate) struct Ctx<'a> {
    pub kernel: &'a Kernel,
    pub global: &'a mut GlobalMemory,
    pub shared: &'a mut SharedMem,
    /// Every thread's local memory, `kernel.local_bytes` each.
    pub local: &'a mut [u8],
    pub params: &'a [u8],
    pub limit: u64,
    pub check_shared_init: bool,
    /// Counts events other threads can observe (stores, atomics, exits, collectives), so a
    /// round of spin-waits with no progress is recognised as a deadlock.
    pub progress: u64,
    pub block_threads: u32,
}

/// Little-endian value of 1, 2, 4 or 8 bytes (fixed-size reads: no `memcpy` call).
#[inline]
fn le(bytes: &[u8]) -> u64 {
    match *bytes {
        [a] => a as u64,
        [a, b] => u16::from_le_bytes([a, b]) as u64,
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut v = [0u8; 8];
            let n = bytes.len().min(8);
            v[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(v)
        }
    }
}

/// Stores the low `out.len()` bytes of `v` little-endian.
#[inline]
fn put_le(out: &mut [u8], v: u64) {
    match out.len() {
        1 => out[0] = v as u8,
        2 => out.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => out.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => out.copy_from_slice(&v.to_le_bytes()),
        n => out.copy_from_slice(&v.to_le_bytes()[..n.min(8)]),
    }
}

#[inline]
fn extend(v: u64, elem: Elem) -> u64 {
    if !elem.signed {
        return v;
    }
    match elem.bytes {
        1 => v as i8 as i64 as u64,
        2 => v as i16 as i64 as u64,
        4 => v as i32 as i64 as u64,
        _ => v,
    }
}

impl Ctx<'_> {
    /// The bytes an access touches, checked for bounds and alignment; shared-memory reads are
    /// checked for having been written, and shared-memory writes are recorded.
    #[inline]
    fn bytes(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<&mut [u8], FaultKind> {
        let oob = FaultKind::OutOfBounds {
            space,
            access,
            addr,
            size,
        };
        match space {
            Space::Global | Space::Generic => self.global.bytes_mut(addr, size as u64).ok_or(oob),
            Space::Shared => {
                let start = addr as usize;
                let end = start.saturating_add(size as usize);
                if end > self.shared.bytes.len() {
                    return Err(oob);
                }
                let written = &mut self.shared.written[start..end];
                match access {
                    Access::Store => written.fill(true),
                    Access::Load | Access::Atomic => {
                        let unwritten = if self.check_shared_init {
                            written.iter().position(|w| !w)
                        } else {
                            None
                        };
                        if let Some(i) = unwritten {
                            return Err(FaultKind::Uninitialized {
                                addr: addr + i as u64,
                            });
                        }
                        if access == Access::Atomic {
                            written.fill(true);
                        }
                    }
                }
                Ok(&mut self.shared.bytes[start..end])
            }
            Space::Local => {
                let per = self.kernel.local_bytes as usize;
                let start = addr as usize;
                if start.saturating_add(size as usize) > per {
                    return Err(oob);
                }
                let base = thread * per + start;
                Ok(&mut self.local[base..base + size as usize])
            }
            Space::Const => Err(oob),
        }
    }

    /// Resolves generic addresses and checks alignment.
    #[inline]
    fn place(
        &self,
        space: Space,
        addr: u64,
        size: u32,
        access: Access,
    ) -> Result<(Space, u64), FaultKind> {
        let (space, addr) = match space {
            Space::Generic => resolve_generic(addr),
            Space::Shared | Space::Local => (space, addr & 0xffff_ffff),
            _ => (space, addr),
        };
        if addr & (size as u64 - 1) != 0 {
            return Err(FaultKind::Misaligned {
                access,
                addr: to_generic(space, addr),
                size,
            });
        }
        Ok((space, addr))
    }

    /// Reads `size` (at most 16) bytes.
    #[inline]
    pub(crate) fn read(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<[u8; 16], FaultKind> {
        let (space, addr) = self.place(space, addr, size, access)?;
        let mut out = [0u8; 16];
        if space == Space::Const {
            let start = addr as usize;
            let data = &self.kernel.const_data;
            let src = data.get(start..start.saturating_add(size as usize)).ok_or(
                FaultKind::OutOfBounds {
                    space,
                    access,
                    addr,
                    size,
                },
            )?;
            out[..size as usize].copy_from_slice(src);
            return Ok(out);
        }
        let src = self.bytes(space, addr, size, thread, access)?;
        out[..size as usize].copy_from_slice(src);
        Ok(out)
    }

    #[inline]
    pub(crate) fn write(
        &mut self,
        space: Space,
        addr: u64,
        data: &[u8],
        thread: usize,
    ) -> Result<(), FaultKind> {
        let (space, addr) = self.place(space, addr, data.len() as u32, Access::Store)?;
        self.bytes(space, addr, data.len() as u32, thread, Access::Store)?
            .copy_from_slice(data);
        Ok(())
    }

    fn check_range(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<(), FaultKind> {
        let (space, addr) = self.place(space, addr, size, access)?;
        if space == Space::Shared {
            if (addr as usize).saturating_add(size as usize) > self.shared.bytes.len() {
                return Err(FaultKind::OutOfBounds {
                    space,
                    access,
                    addr,
                    size,
                });
            }
            return Ok(());
        }
        self.bytes(space, addr, size, thread, Access::Load)
            .map(|_| ())
    }

    fn complete_copies(
        &mut self,
        th: &mut Thread,
        t: usize,
        keep_groups: u32,
    ) -> Result<(), Fault> {
        if th.pending.is_empty() {
            return Ok(());
        }
        let limit = if keep_groups == u32::MAX {
            u32::MAX
        } else {
            th.group.saturating_sub(keep_groups)
        };
        let mut i = 0;
        while i < th.pending.len() {
            if th.pending[i].group >= limit && keep_groups != u32::MAX {
                i += 1;
                continue;
            }
            let copy = th.pending.remove(i);
            let fault = |kind| Fault { kind, pc: copy.pc };
            let mut data = [0u8; 16];
            if copy.src_bytes > 0 {
                let n = copy.src_bytes.min(copy.bytes);
                let (space, addr) = (Space::Global, copy.src);
                let src = self.bytes(space, addr, n, t, Access::Load).map_err(fault)?;
                data[..n as usize].copy_from_slice(src);
            }
            self.write(Space::Shared, copy.dst, &data[..copy.bytes as usize], t)
                .map_err(fault)?;
        }
        Ok(())
    }

    /// Copies (source, destination, length) ranges within thread `t`'s local memory.
    fn copy_local(&mut self, t: usize, copies: &[(u32, u32, u32)]) {
        let per = self.kernel.local_bytes as usize;
        let mine = &mut self.local[t * per..(t + 1) * per];
        for &(src, dst, len) in copies {
            mine.copy_within(src as usize..(src + len) as usize, dst as usize);
        }
    }

    fn activemask(&self, t: usize) -> u32 {
        let warp_base = t / 32 * 32;
        let lanes = (self.block_threads as usize - warp_base).min(32);
        if lanes == 32 {
            u32::MAX
        } else {
            (1u32 << lanes) - 1
        }
    }
}

#[inline]
fn effective(regs: &[u64], at: &MemRef) -> u64 {
    regs[at.base as usize].wrapping_add(at.offset as u64)
}

fn atom_apply(op: AtomOp, ty: AtomTy, old: u64, b: u64, c: u64) -> u64 {
    let signed = matches!(ty, AtomTy::S32 | AtomTy::S64);
    let wide = ty.bytes() == 8;
    let mask = match ty.bytes() {
        8 => u64::MAX,
        2 => 0xffff,
        _ => 0xffff_ffff,
    };
    let (o, bb) = (old & mask, b & mask);
    let sx = |v: u64| {
        if wide {
            v as i64
        } else {
            v as u32 as i32 as i64
        }
    };
    match (op, ty) {
        (AtomOp::Add, AtomTy::F32) => {
            let r = flush_f32(
                flush_f32(f32::from_bits(o as u32)) + flush_f32(f32::from_bits(bb as u32)),
            );
            r.to_bits() as u64
        }
        (AtomOp::Add, AtomTy::F64) => (f64::from_bits(o) + f64::from_bits(bb)).to_bits(),
        (AtomOp::Add, AtomTy::F16x2 | AtomTy::Bf16x2 | AtomTy::F16 | AtomTy::Bf16) => {
            let kind = if matches!(ty, AtomTy::F16x2 | AtomTy::F16) {
                Half::F16
            } else {
                Half::Bf16
            };
            let add = |x: u64, y: u64| {
                half_op(
                    kind,
                    RoundedOp::Add,
                    FloatMode::NEAREST,
                    x as u16,
                    y as u16,
                    0,
                ) as u64
            };
            let lo = add(o, bb);
            if matches!(ty, AtomTy::F16 | AtomTy::Bf16) {
                lo
            } else {
                (add(o >> 16, bb >> 16) << 16) | lo
            }
        }
        (AtomOp::Add, _) => o.wrapping_add(bb) & mask,
        (AtomOp::Min, _) => {
            if signed {
                sx(o).min(sx(bb)) as u64 & mask
            } else {
                o.min(bb)
            }
        }
        (AtomOp::Max, _) => {
            if signed {
                sx(o).max(sx(bb)) as u64 & mask
            } else {
                o.max(bb)
            }
        }
        (AtomOp::Exch, _) => bb,
        (AtomOp::Cas, _) => {
            if o == bb {
                c & mask
            } else {
                o
            }
        }
        (AtomOp::And, _) => o & bb,
        (AtomOp::Or, _) => o | bb,
        (AtomOp::Xor, _) => o ^ bb,
        (AtomOp::Inc, _) => {
            if o >= bb {
                0
            } else {
                o + 1
            }
        }
        (AtomOp::Dec, _) => {
            if o == 0 || o > bb {
                bb
            } else {
                o - 1
            }
        }
    }
}

/// An mbarrier object as the emulator lays out its 8 bytes: pending arrivals (bits 0..21),
/// expected arrivals (21..42), outstanding transaction bytes (42..63, two's complement) and the
/// current phase's parity (bit 63).
#[derive(Debug, Clone, Copy)]
struct Mbar {
    pending: u32,
    expected: u32,
    tx: i32,
    phase: bool,
}

const MASK21: u64 = (1 << 21) - 1;

impl Mbar {
    fn from_bits(v: u64) -> Mbar {
        let tx = ((v >> 42) & MASK21) as i32;
        Mbar {
            pending: (v & MASK21) as u32,
            expected: ((v >> 21) & MASK21) as u32,
            tx: (tx << 11) >> 11,
            phase: v >> 63 == 1,
        }
    }
    fn bits(self) -> u64 {
        (self.pending as u64 & MASK21)
            | (self.expected as u64 & MASK21) << 21
            | (self.tx as u32 as u64 & MASK21) << 42
            | (self.phase as u64) << 63
    }
    /// Arrives `count` times; returns the token of the phase arrived at.
    fn arrive(&mut self, count: u32) -> u64 {
        let token = (self.phase as u64) << 63;
        self.pending = self.pending.saturating_sub(count);
        self.settle();
        token
    }
    /// Completes the phase once every arrival and transaction byte is in.
    fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase = !self.phase;
            self.pending = self.expected;
        }
    }
}

/// Executes one mbarrier operation; `Ok(None)` is a wait whose phase has not completed.
/// A fault's pc is `u32::MAX` when it belongs to this instruction.
fn mbarrier(
    ctx: &mut Ctx<'_>,
    th: &mut Thread,
    t: usize,
    op: crate::program::MbarOp,
    space: Space,
    addr: u64,
    b: u64,
) -> Result<Option<u64>, Fault> {
    use crate::program::MbarOp;
    let here = |kind| Fault { kind, pc: u32::MAX };
    if let MbarOp::Init = op {
        let state = Mbar {
            pending: b as u32,
            expected: b as u32,
            tx: 0,
            phase: false,
        };
        ctx.write(space, addr, &state.bits().to_le_bytes(), t)
            .map_err(here)?;
        return Ok(Some(0));
    }
    if let MbarOp::CpAsyncArrive { .. } = op {
        ctx.complete_copies(th, t, u32::MAX)?;
    }
    let bytes = ctx.read(space, addr, 8, t, Access::Atomic).map_err(here)?;
    let mut state = Mbar::from_bits(le(&bytes[..8]));
    let result = match op {
        MbarOp::Init | MbarOp::Inval => return Ok(Some(0)),
        MbarOp::Wait { parity } => {
            let waited = if parity { b & 1 == 1 } else { b >> 63 == 1 };
            return Ok((state.phase != waited).then_some(1));
        }
        MbarOp::Arrive { drop } => {
            if drop {
                state.expected = state.expected.saturating_sub(b as u32);
            }
            state.arrive(b as u32)
        }
        MbarOp::ArriveExpectTx => {
            state.tx = state.tx.wrapping_add(b as i32);
            state.arrive(1)
        }
        MbarOp::ExpectTx => {
            state.tx = state.tx.wrapping_add(b as i32);
            0
        }
        MbarOp::CompleteTx => {
            state.tx = state.tx.wrapping_sub(b as i32);
            state.settle();
            0
        }
        MbarOp::CpAsyncArrive { noinc } => {
            // Without `.noinc` the pending count is raised before the arrival: no net change.
            if noinc {
                state.arrive(1);
            }
            0
        }
    };
    ctx.write(space, addr, &state.bits().to_le_bytes(), t)
        .map_err(here)?;
    Ok(Some(result))
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
                if let Err(kind) = ctx.write(at.space, addr, &new.to_le_bytes()[..size as usize], t)
                {
                    break Err(fault(kind));
                }
                r!(d) = old;
            }
            Op::Bra { target } => {
                pc = target as usize;
                if th.executed + executed > ctx.limit {
                    break Err(fault(FaultKind::Limit));
                }
                continue;
            }
            Op::Exit => {
                ctx.progress += 1;
                th.status = Status::Exited;
                break ctx.complete_copies(th, t, u32::MAX);
            }
            Op::Ret => match th.calls.pop() {
                None => {
                    ctx.progress += 1;
                    th.status = Status::Exited;
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
            Op::Activemask { d } => r!(d) = ctx.activemask(t) as u64,
            Op::Trap => break Err(fault(FaultKind::Trap)),
        }
        pc += 1;
    };
    th.pc = pc as u32;
    th.executed += executed;
    result
}
