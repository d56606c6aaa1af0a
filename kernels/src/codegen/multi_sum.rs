//! CTA sums of several values at once (2 or 4), for kernels that reduce a few statistics per
//! row: each butterfly step over a warp exchanges only half of the values still held, so four
//! sums cost 6 shuffles per warp stage instead of 20.
//!
//! At the step with distance `δ` (16, then 8, …) a lane whose `δ` bit is set keeps the upper
//! half of its values and sends the lower half, its partner the reverse, and each adds what it
//! receives to what it keeps. After `log₂ n` such steps a lane holds one sum (lane `l` holds
//! sum `(l >> (5 − log₂ n))`, read from the high bits down) and plain butterfly steps finish
//! it. Both partners of a step add the same two values, so every lane holding a sum has the
//! same bits, and the order of additions depends only on the CTA's size: the sums are
//! deterministic and no atomics are involved.

use super::reduce::{gather_warp_partials, MAX_WARPS};
use kernel_dsl::builder::{KernelBuilder, SharedArray, Value};
use kernel_dsl::ir::Dim;
use kernel_dsl::op::{Cmp, ShflMode};
use kernel_dsl::scalar::F32;

/// Sums of `n` values (2 or 4) over a whole CTA (a multiple of 32 threads), with one shared
/// array of `n × 32` floats.
pub(crate) struct BlockSums {
    scratch: SharedArray<F32>,
    n: u32,
}

/// The warp's sums of `vals` (`n` of them, a power of two ≤ 32): lane `l` ends holding sum
/// `l >> (5 − log₂ n)`. All 32 lanes must be active.
fn warp_sums(b: &mut KernelBuilder, vals: &[Value<F32>]) -> Value<F32> {
    let lane = b.lane_id();
    let zero = b.const_u32(0);
    let mut held = vals.to_vec();
    let mut delta = 16;
    while held.len() > 1 {
        let half = held.len() / 2;
        let bit = b.const_u32(delta);
        let masked = b.and(lane, bit);
        let upper = b.setp(Cmp::Ne, masked, zero);
        held = (0..half)
            .map(|i| {
                let (lo, hi) = (held[i], held[half + i]);
                let send = b.selp(upper, lo, hi);
                let keep = b.selp(upper, hi, lo);
                let got = b.shfl(ShflMode::Bfly, send, delta);
                b.add(keep, got)
            })
            .collect();
        delta /= 2;
    }
    let acc = b.var(held[0]);
    while delta >= 1 {
        let other = b.shfl(ShflMode::Bfly, acc, delta);
        let s = b.add(acc, other);
        b.assign(acc, s);
        delta /= 2;
    }
    acc
}

impl BlockSums {
    /// Declares the shared scratch (named `name`) for sums of `n` values.
    pub(crate) fn new(b: &mut KernelBuilder, name: &str, n: u32) -> BlockSums {
        assert!(n == 2 || n == 4, "BlockSums sums 2 or 4 values");
        let scratch = b.shared_array::<F32>(name, n * MAX_WARPS);
        BlockSums { scratch, n }
    }

    /// The CTA-wide sums of `vals`, in every thread. Must be reached by every thread of the
    /// CTA (two barriers; the second lets the scratch be reused at once).
    pub(crate) fn sum(&self, b: &mut KernelBuilder, vals: &[Value<F32>]) -> Vec<Value<F32>> {
        assert_eq!(
            vals.len() as u32,
            self.n,
            "BlockSums::sum takes exactly n values"
        );
        let shift = 5 - self.n.trailing_zeros();
        let mine = warp_sums(b, vals);
        let tid = b.tid(Dim::X);
        let lane = b.lane_id();
        let warp = b.shr(tid, 5);
        let which = b.shr(lane, shift);
        let low_bits = b.const_u32((1 << shift) - 1);
        let low = b.and(lane, low_bits);
        let zero = b.const_u32(0);
        // One lane per sum writes the warp's value: sum s, warp w at s·32 + w.
        let first = b.setp(Cmp::Eq, low, zero);
        let stride = b.const_u32(MAX_WARPS);
        b.if_(first, |b| {
            let slot = b.mad(which, stride, warp);
            b.st_shared(&self.scratch, slot, mine);
        });
        b.bar_sync();
        let gathered = gather_warp_partials(b, &self.scratch, lane, self.n as usize);
        let total = warp_sums(b, &gathered);
        // Sum s sits in lanes s·2^shift …; every thread takes each from the first of those.
        let totals = (0..self.n)
            .map(|s| b.shfl(ShflMode::Idx, total, s << shift))
            .collect();
        b.bar_sync();
        totals
    }
}
