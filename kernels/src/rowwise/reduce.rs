//! Arg-max over a row's group of threads (a warp, or the whole CTA through one shared slot per
//! warp). Exact and order-independent, so every thread of the group ends with the same bits on
//! every run. No atomics.

use super::bits::{and_pred, or_pred};
use crate::codegen::reduce::MAX_WARPS;
use crate::codegen::rows::Group;
use kernel_dsl::builder::{KernelBuilder, SharedArray, Value};
use kernel_dsl::ir::Dim;
use kernel_dsl::op::{Cmp, ShflMode};
use kernel_dsl::scalar::{Pred, F32, U32};

/// Lane 0 of each warp, the warp index, and whether this thread's lane has a warp slot to read
/// back (lane < number of warps in the CTA).
struct WarpSlots {
    is_lane0: Value<Pred>,
    warp: Value<U32>,
    lane: Value<U32>,
    has_slot: Value<Pred>,
}

fn warp_slots(b: &mut KernelBuilder) -> WarpSlots {
    let tid = b.tid(Dim::X);
    let lane = b.lane_id();
    let warp = b.shr(tid, 5);
    let zero = b.const_u32(0);
    let is_lane0 = b.setp(Cmp::Eq, lane, zero);
    let ntid = b.ntid(Dim::X);
    let c31 = b.const_u32(31);
    let rounded = b.add(ntid, c31);
    let nwarps = b.shr(rounded, 5);
    let has_slot = b.setp(Cmp::Lt, lane, nwarps);
    WarpSlots {
        is_lane0,
        warp,
        lane,
        has_slot,
    }
}

/// A candidate of an arg-max: its value and its index.
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    pub value: Value<F32>,
    pub index: Value<U32>,
}

/// Whether `other` beats `mine`: a larger value, or an equal value at a lower index (so ties go
/// to the lowest index, and the order candidates meet in does not matter).
pub(crate) fn beats(b: &mut KernelBuilder, other: Candidate, mine: Candidate) -> Value<Pred> {
    let greater = b.setp(Cmp::Gt, other.value, mine.value);
    let equal = b.setp(Cmp::Eq, other.value, mine.value);
    let lower = b.setp(Cmp::Lt, other.index, mine.index);
    let tie_lower = and_pred(b, equal, lower);
    or_pred(b, greater, tie_lower)
}

/// Replaces `mine` by `other` where `other` beats it.
pub(crate) fn keep_best(b: &mut KernelBuilder, mine: Candidate, other: Candidate) {
    let take = beats(b, other, mine);
    let v = b.selp(take, other.value, mine.value);
    let i = b.selp(take, other.index, mine.index);
    b.assign(mine.value, v);
    b.assign(mine.index, i);
}

/// The warp's best candidate, in every lane. All 32 lanes must be active.
pub(crate) fn warp_argmax(b: &mut KernelBuilder, c: Candidate) -> Candidate {
    let best = Candidate {
        value: b.var(c.value),
        index: b.var(c.index),
    };
    for delta in [16, 8, 4, 2, 1] {
        let other = Candidate {
            value: b.shfl(ShflMode::Bfly, best.value, delta),
            index: b.shfl(ShflMode::Bfly, best.index, delta),
        };
        keep_best(b, best, other);
    }
    best
}

/// Arg-max over a group.
pub(crate) enum GroupArgMax {
    Warp,
    Block {
        values: SharedArray<F32>,
        indices: SharedArray<U32>,
    },
}

impl GroupArgMax {
    pub(crate) fn new(b: &mut KernelBuilder, group: Group) -> GroupArgMax {
        match group {
            Group::Warp => GroupArgMax::Warp,
            Group::Block => GroupArgMax::Block {
                values: b.shared_array::<F32>("best_value", MAX_WARPS),
                indices: b.shared_array::<U32>("best_index", MAX_WARPS),
            },
        }
    }

    /// The group's best candidate, in every thread of the group. For a CTA group every thread
    /// must reach it (two barriers; the second lets the scratch be reused at once).
    pub(crate) fn argmax(&self, b: &mut KernelBuilder, c: Candidate) -> Candidate {
        let partial = warp_argmax(b, c);
        let GroupArgMax::Block { values, indices } = self else {
            return partial;
        };
        let s = warp_slots(b);
        b.if_(s.is_lane0, |b| {
            b.st_shared(values, s.warp, partial.value);
            b.st_shared(indices, s.warp, partial.index);
        });
        b.bar_sync();
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let none = b.const_u32(u32::MAX);
        let gathered = Candidate {
            value: b.var(ninf),
            index: b.var(none),
        };
        b.if_(s.has_slot, |b| {
            let v = b.ld_shared(values, s.lane);
            let i = b.ld_shared(indices, s.lane);
            b.assign(gathered.value, v);
            b.assign(gathered.index, i);
        });
        let total = warp_argmax(b, gathered);
        b.bar_sync();
        total
    }
}
