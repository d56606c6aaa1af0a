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

/// The k-ranges [`super::gemm`] splits a planned problem into by itself on `sms` SMs: 1
/// (whole tiles) unless the plan is the TMA kernel (on its own operands or on transposed copies:
/// the same tiles and k), the types have a split form, the tiles
/// leave SMs idle and the partials keep a 32-bit index.
pub(crate) fn planned_splits(plan: &Plan, shape: &GemmShape, sms: usize) -> usize {
    let (input, output, _) = plan.problem;
    let tma = matches!(plan.launch, Launch::Tma | Launch::TmaTransposed(_));
    if !tma || !splits_types(input, output) {
        return 1;
    }
    let tiles = plan.config.grid[0] as usize * plan.config.grid[2] as usize;
    let splits = split_count(tiles, shape.k, sms);
    if splits * shape.batch.max(1) * shape.m * shape.n >= 1 << 31 {
        return 1;
    }
    splits
}
