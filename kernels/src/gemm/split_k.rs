//! Split-k for skinny problems (LoRA adapters: n or m at most a few dozen, k in the
//! thousands), where whole tiles would leave most SMs idle: the TMA kernel, launched with
//! several k-ranges, writes each range's raw f32 sums to a partials buffer, and the reduce kernel
//! (`split_reduce_kernel.rs`) adds them in a fixed order. Here: how many ranges, and which
//! types split.

use super::layout::GemmShape;
use super::select::{Launch, Plan};
use super::tma_wgmma_kernel::BK;
use crate::FloatType;

/// The most k-ranges a problem is split into.
const MAX_SPLITS: usize = 8;
/// Each range keeps at least this many 64-deep slabs, so the pipeline fills.
const MIN_SLABS_PER_SPLIT: usize = 4;

/// How many k-ranges to split a problem of `tiles` output tiles (all batches) and `k` into on
/// a device of `sms` SMs: enough ranges to give every SM work, each at least
/// [`MIN_SLABS_PER_SPLIT`] slabs deep; 1 when the tiles already fill the device.
pub(crate) fn split_count(tiles: usize, k: usize, sms: usize) -> usize {
    if tiles * 2 > sms {
        return 1;
    }
    let slabs = k.div_ceil(BK as usize);
    (sms / tiles.max(1))
        .min(slabs / MIN_SLABS_PER_SPLIT)
        .clamp(1, MAX_SPLITS)
}

/// Whether a problem of these types has a split form: an output of the input's type or f32
/// (the reduce's instances, `split_reduce_kernel.rs`). Every input the TMA GEMM takes has one:
/// 16-bit, and f32 read as tf32 (whose one layout, NT, `select` checks).
pub(crate) fn splits_types(input: FloatType, output: FloatType) -> bool {
    output == input || output == FloatType::F32
}

/// How a problem's k is split: into `ranges` k-ranges for every tile from `base` on (tile
/// order), the tiles before `base` running whole in a launch of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KSplit {
    pub ranges: usize,
    pub base: usize,
}

impl KSplit {
    /// Whole tiles: no split.
    pub const WHOLE: KSplit = KSplit { ranges: 1, base: 0 };
}

/// Where the tiles fill whole waves of `sms` and leave a last wave less than half full, that
/// wave's tiles split along k so that it occupies the SMs it would leave idle: the first tile
/// of the tail and its ranges, or `None`. Stream-K's remainder, with the ranges added in a
/// fixed order rather than by atomics.
pub(crate) fn tail_split(tiles: usize, k: usize, sms: usize) -> Option<(usize, usize)> {
    if tiles <= sms {
        return None;
    }
    let tail = tiles % sms;
    if tail == 0 || tail * 2 > sms {
        return None;
    }
    let slabs = k.div_ceil(BK as usize);
    let ranges = (sms / tail)
        .min(slabs / MIN_SLABS_PER_SPLIT)
        .min(MAX_SPLITS);
    (ranges >= 2).then_some((tiles - tail, ranges))
}

/// How [`super::gemm`] splits a planned problem by itself on `sms` SMs: not at all unless the
/// plan is the TMA kernel (on its own operands or on transposed copies: the same tiles and
/// k) and the types have a split form; every tile where the tiles leave SMs idle; a single
/// product's last wave where it is mostly empty ([`tail_split`]); and only while the
/// partials keep a 32-bit index.
pub(crate) fn planned_split(plan: &Plan, shape: &GemmShape, sms: usize) -> KSplit {
    let (input, output, _) = plan.problem;
    let tma = matches!(plan.launch, Launch::Tma | Launch::TmaTransposed(_));
    if !tma || !splits_types(input, output) {
        return KSplit::WHOLE;
    }
    let tiles = plan.config.grid[0] as usize * plan.config.grid[2] as usize;
    let split = match split_count(tiles, shape.k, sms) {
        1 if shape.batch <= 1 => tail_split(tiles, shape.k, sms)
            .map_or(KSplit::WHOLE, |(base, ranges)| KSplit { ranges, base }),
        ranges => KSplit { ranges, base: 0 },
    };
    if split.ranges * shape.batch.max(1) * shape.m * shape.n >= 1 << 31 {
        return KSplit::WHOLE;
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_mostly_empty_last_wave_is_split() {
        // 152 tiles on 132 SMs: 20 left over, split six ways; 133: one, split eight ways.
        assert_eq!(tail_split(152, 4096, 132), Some((132, 6)));
        assert_eq!(tail_split(133, 4096, 132), Some((132, 8)));
        // Whole waves, a last wave more than half full, one wave or less: no split.
        assert_eq!(tail_split(264, 4096, 132), None);
        assert_eq!(tail_split(210, 4096, 132), None);
        assert_eq!(tail_split(100, 4096, 132), None);
        // Too little k for two ranges of four slabs.
        assert_eq!(tail_split(133, 448, 132), None);
    }
}
