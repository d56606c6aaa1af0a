//! The GEMM family: `C = act(α·op(A)·op(B) + β·C + bias) + residual`, row-major, for f32
//! (SIMT fp32 or TF32 tensor cores), bf16 and f16 inputs (tensor cores, f32 accumulation),
//! single or strided-batched, in the three layouts a linear layer's forward and backward need
//! ([`Layout`]). Every size is a run-time parameter; shapes that do not fit their buffers are
//! an [`Error`](crate::Error) before launch.
//!
//! The fp32 SIMT, `mma.sync` and Hopper (`wgmma`) kernels, TMA-fed (with a split-k form) and,
//! for strides the copy engine cannot address, `cp.async`-fed, and the split-k reduce are
//! `#[kernel]` source (`simt_kernel.rs`, `mma_kernel.rs`, `tma_wgmma_kernel.rs`,
//! `async_wgmma_kernel.rs`, `split_reduce_kernel.rs`; [`tma_wgmma_bf16_nt`] launches one Hopper
//! instance on its own). TF32 NN and TN on Hopper run the tf32 TMA GEMM on k-contiguous copies
//! of their MN-major operands (`transposed_operands.rs`). The builder kernels they replace (`mma.sync` and `cp.async`-fed
//! `wgmma`, in `kernels-gen`, built by this crate's build script for the enabled targets) are
//! kept only for `Plan::builder`, to time the two side by side. [`select`] picks the kernel;
//! [`gemm`] checks, selects and launches; [`gemm_with_workspace`] splits k into the caller's
//! [`GemmWorkspace`], so that a skinny problem splits inside a graph capture too;
//! [`gemm_with_f32_copy`] also keeps an f32 copy of a 16-bit output; [`gemm_swiglu`] is a gated MLP's two projections and SwiGLU in one op (one launch
//! on Hopper); [`reference`] is the f64 CPU reference the tests compare with.

mod epilogue;
// `#[device]` epilogue helpers, before the kernels that call them.
#[macro_use]
mod finish;
// The tile order of the persistent Hopper kernels, before them.
#[macro_use]
mod tile_order;
// How the persistent Hopper kernels divide their work, before them.
#[macro_use]
mod work_units;
mod async_wgmma_kernel;
mod fp8;
mod fp8_kernel;
mod fp8_quantize_kernel;
mod layout;
mod mma_kernel;
mod ops;
pub mod reference;
mod select;
mod simt_kernel;
mod split_k;
mod split_reduce_kernel;
mod stream_k;
mod swiglu;
mod tma_wgmma;
mod tma_wgmma_kernel;
mod transposed_operands;
mod workspace;

pub use epilogue::{Activation, Epilogue};
pub use fp8::{gemm_fp8, Fp8Format, Fp8Matrix};
pub use kernels_gen::gemm::Layout;
pub use layout::GemmShape;
pub use ops::{gemm, gemm_split_k, gemm_with_f32_copy, gemm_with_plan, matmul};
pub use select::{select, Math, Plan};
pub use swiglu::gemm_swiglu;
pub use tma_wgmma::tma_wgmma_bf16_nt;
pub(crate) use workspace::gemm_in;
pub use workspace::{
    gemm_with_workspace, split_k_partials, transposed_operand_elems, GemmWorkspace, WorkspaceSize,
};

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

// The `kernels-gen` tables, built by the build script for the enabled targets.
mod built {
    include!(concat!(env!("OUT_DIR"), "/builder_kernels.rs"));
}

static SIMT: [OpKernel; 3] = OpKernel::instances(simt_kernel::GEMM_SIMT_INSTANCES);
static MMA: [OpKernel; 15] = OpKernel::instances(mma_kernel::GEMM_MMA_INSTANCES);
static MMA_BUILDER: [OpKernel; 15] = OpKernel::embedded(&built::GEMM_MMA);
static WGMMA: [OpKernel; 12] = OpKernel::embedded(&built::GEMM_WGMMA);
static ASYNC_WGMMA: [OpKernel; 12] =
    OpKernel::instances(async_wgmma_kernel::GEMM_ASYNC_WGMMA_INSTANCES);
static TMA_WGMMA: [OpKernel; 22] = OpKernel::instances(tma_wgmma_kernel::GEMM_TMA_WGMMA_INSTANCES);
static FP8: [OpKernel; 6] = OpKernel::instances(fp8_kernel::GEMM_FP8_WGMMA_INSTANCES);
static FP8_QUANTIZE: [OpKernel; 4] =
    OpKernel::instances(fp8_quantize_kernel::FP8_QUANTIZE_INSTANCES);
static SPLIT_REDUCE: [OpKernel; 5] =
    OpKernel::instances(split_reduce_kernel::GEMM_SPLITK_REDUCE_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    SIMT[0 1 2],
    MMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14],
    MMA_BUILDER[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14],
    WGMMA[0 1 2 3 4 5 6 7 8 9 10 11],
    ASYNC_WGMMA[0 1 2 3 4 5 6 7 8 9 10 11],
    SPLIT_REDUCE[0 1 2 3 4],
    TMA_WGMMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21],
    FP8[0 1 2 3 4 5],
    FP8_QUANTIZE[0 1 2 3],
];
