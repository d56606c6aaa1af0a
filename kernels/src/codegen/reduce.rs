//! Deterministic sums: a butterfly over the warp (every lane ends with the same bits, since
//! each step adds the same two values in either order) and a block sum through one shared slot
//! per warp, read back by every warp in the same order. No atomics.

use kernel_dsl::builder::{KernelBuilder, SharedArray, Value};
use kernel_dsl::ir::Dim;
use kernel_dsl::op::{Cmp, ShflMode};
use kernel_dsl::scalar::{F32, U32};

/// Most warps a CTA can hold (1024 threads).
pub(crate) const MAX_WARPS: u32 = 32;

/// The warp's sum of `v`, in every lane. All 32 lanes must be active.
pub(crate) fn warp_sum(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let acc = b.var(v);
    for delta in [16, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, acc, delta);
        let s = b.add(acc, other);
        b.assign(acc, s);
    }
    acc
}

/// The warp's maximum of `v`, in every lane. All 32 lanes must be active.
pub(crate) fn warp_max(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let acc = b.var(v);
    for delta in [16, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, acc, delta);
        let s = b.max(acc, other);
        b.assign(acc, s);
    }
    acc
}

/// Sums up to `lanes` values at once over the whole CTA (whose size must be a multiple of 32),
/// with one shared array of `lanes × 32` floats.
pub(crate) struct BlockSum {
    scratch: SharedArray<F32>,
    lanes: u32,
}

impl BlockSum {
    /// Declares the shared scratch (named `name`) for sums of up to `lanes` values.
    pub(crate) fn new(b: &mut KernelBuilder, name: &str, lanes: u32) -> BlockSum {
        let scratch = b.shared_array::<F32>(name, lanes * MAX_WARPS);
        BlockSum { scratch, lanes }
    }

    /// The CTA-wide sums of `vals`, in every thread. Must be reached by every thread of the
    /// CTA (it holds two barriers; the second lets the scratch be reused at once).
    pub(crate) fn sum(&self, b: &mut KernelBuilder, vals: &[Value<F32>]) -> Vec<Value<F32>> {
        assert!(vals.len() as u32 <= self.lanes, "BlockSum sized too small");
        let partial: Vec<Value<F32>> = vals.iter().map(|&v| warp_sum(b, v)).collect();
        let tid = b.tid(Dim::X);
        let lane = b.lane_id();
        let warp = b.shr(tid, 5);
        let zero_u = b.const_u32(0);
        let is_lane0 = b.setp(Cmp::Eq, lane, zero_u);
        b.if_(is_lane0, |b| {
            for (i, &p) in partial.iter().enumerate() {
                let off = b.const_u32(i as u32 * MAX_WARPS);
                let slot = b.add(off, warp);
                b.st_shared(&self.scratch, slot, p);
            }
        });
        b.bar_sync();
        let gathered = gather_warp_partials(b, &self.scratch, lane, partial.len());
        let totals = gathered.iter().map(|&g| warp_sum(b, g)).collect();
        b.bar_sync();
        totals
    }
}

/// Once every warp `w` has stored its partial `i` at `scratch[i·32 + w]` (and a barrier has
/// passed): partial `i` of warp `lane` for `i < count`, read by every warp, 0 past the CTA's
/// warps.
pub(crate) fn gather_warp_partials(
    b: &mut KernelBuilder,
    scratch: &SharedArray<F32>,
    lane: Value<U32>,
    count: usize,
) -> Vec<Value<F32>> {
    let ntid = b.ntid(Dim::X);
    let c31 = b.const_u32(31);
    let rounded = b.add(ntid, c31);
    let nwarps = b.shr(rounded, 5);
    let has_slot = b.setp(Cmp::Lt, lane, nwarps);
    let zero = b.const_f32(0.0);
    let gathered: Vec<Value<F32>> = (0..count).map(|_| b.var(zero)).collect();
    b.if_(has_slot, |b| {
        for (i, &g) in gathered.iter().enumerate() {
            let off = b.const_u32(i as u32 * MAX_WARPS);
            let slot = b.add(off, lane);
            let v = b.ld_shared(scratch, slot);
            b.assign(g, v);
        }
    });
    gathered
}
