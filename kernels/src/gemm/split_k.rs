//! Split-k for skinny problems (LoRA adapters: n or m at most a few dozen, k in the
//! thousands), where whole tiles would leave most SMs idle: the TMA kernel, launched with
//! several k-ranges, or the `mma.sync` kernel, launched over equal k-ranges as a batch, writes
//! each range's raw f32 sums to a partials buffer, and the reduce kernel
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

/// The `mma.sync` GEMM runs its k-ranges as a batch of equal sub-problems (each range's
/// operands a fixed stride further along k), so a range is a whole number of this many
/// elements of k: every range then starts where a 16-byte vector of any input type does.
pub(crate) const MMA_SPLIT_GRANULE: usize = 64;

/// How many equal k-ranges the `mma.sync` GEMM splits a one-batch problem of `tiles` output
/// tiles and `k` into on `sms` SMs: [`split_count`]'s count, lowered until `k` is that many
/// whole ranges of [`MMA_SPLIT_GRANULE`]s; 1 where no count above 1 is.
pub(crate) fn mma_split_count(tiles: usize, k: usize, sms: usize) -> usize {
    let most = split_count(tiles, k, sms);
    (2..=most)
        .rev()
        .find(|&s| mma_splits_evenly(k, s))
        .unwrap_or(1)
}

/// Whether `k` is `splits` equal ranges of whole [`MMA_SPLIT_GRANULE`]s.
pub(crate) fn mma_splits_evenly(k: usize, splits: usize) -> bool {
    splits > 0 && k.is_multiple_of(splits * MMA_SPLIT_GRANULE)
}

/// Whether a problem of these types has a split form: an output of the input's type or f32
/// (the reduce's instances, `split_reduce_kernel.rs`). Every input the TMA GEMM takes has one:
/// 16-bit, and f32 read as tf32 (whose one layout, NT, `select` checks).
pub(crate) fn splits_types(input: FloatType, output: FloatType) -> bool {
    output == input || output == FloatType::F32
}

/// The k-ranges [`super::gemm`] splits a planned problem into by itself on `sms` SMs: 1
/// (whole tiles) unless the plan is the TMA kernel (on its own operands or on transposed copies:
/// the same tiles and k) or the `mma.sync` kernel on one batch, the types have a split form,
/// the tiles leave SMs idle and the partials keep a 32-bit index.
pub(crate) fn planned_splits(plan: &Plan, shape: &GemmShape, sms: usize) -> usize {
    let (input, output, _) = plan.problem;
    if !splits_types(input, output) {
        return 1;
    }
    let grid = plan.config.grid;
    let splits = match plan.launch {
        Launch::Tma | Launch::TmaTransposed(_) => {
            split_count(grid[0] as usize * grid[2] as usize, shape.k, sms)
        }
        Launch::Mma(_) if shape.batch <= 1 => {
            mma_split_count(grid[0] as usize * grid[1] as usize, shape.k, sms)
        }
        _ => return 1,
    };
    if splits * shape.batch.max(1) * shape.m * shape.n >= 1 << 31 {
        return 1;
    }
    splits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank-16 adapter's gradient (32 tiles of 128, k = 4096) on 132 SMs: four ranges of
    /// 1024; a k that no count above 1 divides into whole granules stays whole.
    #[test]
    fn the_mma_split_takes_equal_ranges_of_whole_granules() {
        assert_eq!(mma_split_count(32, 4096, 132), 4);
        assert_eq!(split_count(32, 4096 + 64, 132), 4);
        assert_eq!(mma_split_count(32, 4096 + 64, 132), 1);
        // 3 ranges of 1344 where 4 ranges would not be whole granules.
        assert_eq!(mma_split_count(32, 4032, 132), 3);
        assert_eq!(mma_split_count(100, 4096, 132), 1);
    }
}
