//! The GEMM family: `C = act(α·op(A)·op(B) + β·C + bias) + residual`, row-major, for f32
//! (SIMT fp32 or TF32 tensor cores), bf16 and f16 inputs (tensor cores, f32 accumulation),
//! single or strided-batched, in the three layouts a linear layer's forward and backward need
//! ([`Layout`]). Every size is a run-time parameter; shapes that do not fit their buffers are
//! an [`Error`](crate::Error) before launch.
//!
//! [`select`] picks the kernel; [`gemm`] checks, selects and launches; [`reference`] is the
//! f64 CPU reference the tests compare with.

mod async_load;
mod element;
mod epilogue;
mod layout;
mod matrix;
mod ops;
mod params;
pub mod reference;
mod select;
mod simt;
mod split_k;
mod tensor_core;
mod tile_load;
mod tma;
mod transpose_load;
mod wgmma;
mod wgmma_store;
mod wgmma_tma;

pub use element::{Dtype, GemmElement};
pub use epilogue::{Activation, Epilogue};
pub use layout::{GemmShape, Layout};
pub use ops::{gemm, gemm_split_k, gemm_with_plan, matmul};
pub use select::{select, Math, Plan};

use crate::codegen::{kernel_refs, kernel_table};
use crate::OpKernel;
use tensor_core::{build_mma, MMA_SPECS};
use wgmma::{build_wgmma, WGMMA_SPECS};
use wgmma_tma::{build_wgmma_tma, TMA_SPECS};

kernel_table!(static SIMT = simt::build_simt, Layout::ALL, [0 1 2]);
kernel_table!(static MMA = build_mma, MMA_SPECS, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14]);
kernel_table!(static WGMMA = build_wgmma, WGMMA_SPECS, [0 1 2 3 4 5 6 7 8 9 10 11]);
kernel_table!(static WGMMA_TMA = build_wgmma_tma, TMA_SPECS, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17]);
kernel_table!(static SPLIT_REDUCE = split_k::build_reduce, split_k::REDUCE_SPECS, [0 1 2 3]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    SIMT[0 1 2],
    MMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14],
    WGMMA[0 1 2 3 4 5 6 7 8 9 10 11],
    WGMMA_TMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17],
    SPLIT_REDUCE[0 1 2 3],
];
