//! The GEMM kernels, written with the builder until the language has the Hopper set:
//! `mma.sync` (bf16, f16, TF32), `wgmma` fed by `cp.async` and `wgmma` fed by TMA (with its
//! split-k form). Each `*_SPECS` table is the order of its kernels in [`crate::library`], and
//! so the index the `kernels` crate selects by.

pub mod async_load;
pub mod epilogue;
pub mod layout;
pub mod matrix;
pub mod params;
pub mod tensor_core;
pub mod tma;
pub mod transpose_load;
pub mod wgmma;
pub mod wgmma_store;
pub mod wgmma_tma;

pub use layout::Layout;
