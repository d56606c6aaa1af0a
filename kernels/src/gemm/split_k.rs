//! Split-k for skinny problems (LoRA adapters: n or m at most a few dozen, k in the
//! thousands), where whole tiles would leave most SMs idle: the TMA kernel's split form
//! writes each k-range's raw f32 sums to a partials buffer, and the reduce kernel here adds
//! the ranges in a fixed order (so results are bit-identical run to run) and applies the
//! epilogue.

use super::element::Dtype;
use super::matrix::mat_param;
use super::params::declare;
use super::wgmma_tma::{tma_spec_index, TmaSpec, TMA_BK};
use super::{SPLIT_REDUCE, WGMMA_TMA};
use crate::codegen::tensor::Format;
use crate::OpKernel;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;

pub(crate) const REDUCE_THREADS: u32 = 256;
/// The most k-ranges a problem is split into.
const MAX_SPLITS: usize = 8;
/// Each range keeps at least this many 64-deep slabs, so the pipeline fills.
const MIN_SLABS_PER_SPLIT: usize = 4;

/// One reduce specialization: the inputs' type (bias, residual) and the output's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ReduceSpec {
    pub input: Dtype,
    pub output: Dtype,
}

pub(crate) const REDUCE_SPECS: [ReduceSpec; 4] = [
    ReduceSpec {
        input: Dtype::Bf16,
        output: Dtype::Bf16,
    },
    ReduceSpec {
        input: Dtype::Bf16,
        output: Dtype::F32,
    },
    ReduceSpec {
        input: Dtype::F16,
        output: Dtype::F16,
    },
    ReduceSpec {
        input: Dtype::F16,
        output: Dtype::F32,
    },
];

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

/// The split form of the TMA kernel and the reduce kernel for a problem's types.
pub(crate) fn split_kernels(
    input: Dtype,
    output: Dtype,
    layout: super::Layout,
) -> Option<(&'static OpKernel, &'static OpKernel)> {
    let tma = tma_spec_index(TmaSpec {
        input,
        output: Dtype::F32,
        layout,
        split_k: true,
    })?;
    let reduce = REDUCE_SPECS
        .iter()
        .position(|s| *s == ReduceSpec { input, output })?;
    Some((&WGMMA_TMA[tma], &SPLIT_REDUCE[reduce]))
}

/// `C = epilogue(Σ_r partials[r])`: one thread per output element of batch `ctaid.z`, the
/// ranges added in order. Parameters: the GEMM's own, then `splits` and `partials`.
pub(crate) fn build_reduce(s: ReduceSpec) -> Kernel {
    let name = format!(
        "gemm_splitk_reduce_{}_{}",
        s.input.suffix(),
        s.output.suffix()
    );
    let mut b = KernelBuilder::new(name);
    b.reqntid([REDUCE_THREADS, 1, 1]);
    let p = declare(&mut b, s.input.format(), s.output.format());
    let splits = b.param::<U32>("splits");
    let partials = mat_param(&mut b, "partials", Format::F32, false).whole();
    let i = b.global_index(Dim::X);
    let mn = b.mul(p.m, p.n);
    let inside = b.setp(Cmp::Lt, i, mn);
    b.if_(inside, |b| {
        let z = b.ctaid(Dim::Z);
        let batches = b.nctaid(Dim::Z);
        let zero_f = b.const_f32(0.0);
        let sum = b.var(zero_f);
        let zero = b.const_u32(0);
        let one = b.const_u32(1);
        b.for_range(zero, splits, one, |b, r| {
            let matrix = b.mad(r, batches, z);
            let at = b.mad(matrix, mn, i);
            let v = partials.load(b, at);
            let t = b.add(sum, v);
            b.assign(sum, t);
        });
        let row = b.div(i, p.n);
        let col = b.rem(i, p.n);
        let idx = b.mad(row, p.ldc, col);
        p.epilogue.store(b, idx, col, sum);
    });
    b.finish()
}
