//! The GEMM kernels, written with the builder until the language has the Hopper set:
//! `mma.sync` (bf16, f16, TF32) and `wgmma` fed by `cp.async` (the TMA-fed Hopper GEMM is
//! `#[kernel]` source in `kernels`). Each `*_SPECS` table is the order of its kernels in
//! [`crate::library`], and so the index the `kernels` crate selects by.

pub mod async_load;
pub mod epilogue;
pub mod layout;
pub mod matrix;
pub mod params;
pub mod tensor_core;
pub mod transpose_load;
pub mod wgmma;
pub mod wgmma_store;

pub use layout::Layout;
