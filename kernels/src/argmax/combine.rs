//! The end of an arg-max CTA: its segment's best candidate becomes a partial in the workspace,
//! and the last CTA of the row to finish picks the best partial and writes the row's index.
//!
//! Workspace (u32 words): `rows` counters, then `(value bits, index)` per segment, row-major.
//! Thread 0 stores its partial, fences, and bumps the row's counter with `atom.inc` wrapping at
//! `splits − 1`: the CTA that reads `splits − 1` is the last, and the wrap leaves the counter at
//! 0 for the next launch. Its warp 0 then reads every partial of the row (through L2, after a
//! fence) and keeps the best. The best of a set does not depend on the order the CTAs finish
//! in (ties go to the lowest index), so the result is the same on every run.

use crate::codegen::bf16::{bits_to_f32, f32_to_bits};
use crate::codegen::fresh;
use crate::rowwise::reduce::{keep_best, warp_argmax, Candidate};
use kernel_dsl::builder::{GlobalSlice, KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Dim, Operand};
use kernel_dsl::op::{AtomOp, CacheOp, Cmp, Op, Scope, ShflMode};
use kernel_dsl::scalar::U32;
use kernel_dsl::{ScalarType, StateSpace};

/// Where one CTA's partial goes and what the row's last CTA needs.
pub(super) struct Segment {
    pub row: Value<U32>,
    pub split: Value<U32>,
    pub splits: Value<U32>,
    pub rows: Value<U32>,
}

/// Publishes `best` (the CTA's candidate, the same in every thread) and, in the row's last
/// CTA, writes `index[row]`. Reached by every thread of the CTA.
pub(super) fn finish(
    b: &mut KernelBuilder,
    workspace: &GlobalSlice<U32, true>,
    index: &GlobalSlice<U32, true>,
    seg: &Segment,
    best: Candidate,
) {
    let tid = b.tid(Dim::X);
    let c32 = b.const_u32(32);
    let in_warp0 = b.setp(Cmp::Lt, tid, c32);
    b.if_(in_warp0, |b| {
        let zero = b.const_u32(0);
        let is_t0 = b.setp(Cmp::Eq, tid, zero);
        let ticket = b.var(zero);
        b.if_(is_t0, |b| {
            let slot = partial_slot(b, seg, seg.split);
            let bits = f32_to_bits(b, best.value);
            b.st_global(workspace, slot, bits);
            let one = b.const_u32(1);
            let next = b.add(slot, one);
            b.st_global(workspace, next, best.index);
            fence_gpu(b);
            let last = b.sub(seg.splits, one);
            let t = atom_inc(b, workspace, seg.row, last);
            b.assign(ticket, t);
        });
        let ticket = b.shfl(ShflMode::Idx, ticket, 0);
        let one = b.const_u32(1);
        let last = b.sub(seg.splits, one);
        let is_last = b.setp(Cmp::Eq, ticket, last);
        b.if_(is_last, |b| {
            fence_gpu(b);
            let ninf = b.const_f32(f32::NEG_INFINITY);
            let none = b.const_u32(u32::MAX);
            let mine = Candidate {
                value: b.var(ninf),
                index: b.var(none),
            };
            let lane = b.lane_id();
            b.for_range(lane, seg.splits, c32, |b, p| {
                let slot = partial_slot(b, seg, p);
                let bits = load_l2(b, workspace, slot);
                let next = b.add(slot, one);
                let at = load_l2(b, workspace, next);
                let value = bits_to_f32(b, bits);
                keep_best(b, mine, Candidate { value, index: at });
            });
            let top = warp_argmax(b, mine);
            b.if_(is_t0, |b| b.st_global(index, seg.row, top.index));
        });
    });
}

/// The first word of segment `split`'s partial: after the `rows` counters, two words each.
fn partial_slot(b: &mut KernelBuilder, seg: &Segment, split: Value<U32>) -> Value<U32> {
    let pair = b.mad(seg.row, seg.splits, split);
    let words = b.shl(pair, 1);
    b.add(seg.rows, words)
}

/// `fence.acq_rel.gpu`: orders this thread's global accesses before and after it, device-wide
/// (lighter than `membar.gl`, which is sequentially consistent).
fn fence_gpu(b: &mut KernelBuilder) {
    b.inst(Op::Fence { scope: Scope::Gpu }, vec![], vec![]);
}

/// `atom.global.inc.u32`: returns the old value `o` and stores `o ≥ wrap ? 0 : o + 1`.
fn atom_inc(
    b: &mut KernelBuilder,
    s: &GlobalSlice<U32, true>,
    i: Value<U32>,
    wrap: Value<U32>,
) -> Value<U32> {
    let addr = b.element_address(s, i);
    let old = fresh::<U32>(b);
    b.inst(
        Op::Atom {
            space: StateSpace::Global,
            op: AtomOp::Inc,
            ty: ScalarType::U32,
        },
        vec![old.reg().into()],
        vec![
            Operand::Addr {
                base: AddrBase::Reg(addr.reg()),
                offset: 0,
            },
            wrap.reg().into(),
        ],
    );
    old
}

/// `ld.global.cg.u32`: a load that skips L1, so it sees what other SMs wrote.
fn load_l2(b: &mut KernelBuilder, s: &GlobalSlice<U32, true>, i: Value<U32>) -> Value<U32> {
    let addr = b.element_address(s, i);
    let v = fresh::<U32>(b);
    b.inst(
        Op::Ld {
            space: StateSpace::Global,
            ty: ScalarType::U32,
            vec: None,
            nc: false,
            cache: Some(CacheOp::Cg),
        },
        vec![v.reg().into()],
        vec![Operand::Addr {
            base: AddrBase::Reg(addr.reg()),
            offset: 0,
        }],
    );
    v
}
