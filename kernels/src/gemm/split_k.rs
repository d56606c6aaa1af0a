//! Split-k for skinny problems (LoRA adapters: n or m at most a few dozen, k in the
//! thousands), where whole tiles would leave most SMs idle: the TMA kernel, launched with
//! several k-ranges, writes each range's raw f32 sums to a partials buffer, and the reduce kernel
//! (`split_reduce_kernel.rs`) adds them in a fixed order. Here: how many ranges, and
//! which pair of kernels.

use super::select::Launch;
use super::WGMMA_TMA;
use crate::FloatType;
use crate::OpKernel;
use kernels_gen::gemm::wgmma_tma::{tma_spec_index, TmaSpec, TMA_BK};

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
    let slabs = k.div_ceil(TMA_BK as usize);
    (sms / tiles.max(1))
        .min(slabs / MIN_SLABS_PER_SPLIT)
        .clamp(1, MAX_SPLITS)
}

/// The kernel that writes a split problem's f32 partials.
#[derive(Clone, Copy)]
pub(crate) enum SplitKernel {
    /// The `#[kernel]` TMA GEMM's f32-output instance, launched with `splits` ranges.
    Tma,
    /// The builder's split form, kept only to be timed beside it (`Plan::builder`).
    Builder(&'static OpKernel),
}

/// The split form for a problem's types, where the reduce (`split_reduce_kernel.rs`) has an
/// instance for them (16-bit inputs, an output of the input's type or f32): the `#[kernel]`
/// GEMM for a plan of it, the builder's for a builder plan.
pub(crate) fn split_kernel(
    input: FloatType,
    output: FloatType,
    layout: super::Layout,
    launch: Launch,
) -> Option<SplitKernel> {
    if input == FloatType::F32 || (output != input && output != FloatType::F32) {
        return None;
    }
    match launch {
        Launch::Tma(_) => Some(SplitKernel::Tma),
        Launch::Builder => {
            let tma = tma_spec_index(TmaSpec {
                input,
                output: FloatType::F32,
                layout,
                split_k: true,
            })?;
            Some(SplitKernel::Builder(&WGMMA_TMA[tma]))
        }
        Launch::Simt(_) | Launch::Mma(_) => None,
    }
}
