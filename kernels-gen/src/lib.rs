//! The library kernels still written with [`KernelBuilder`](kernel_dsl::builder::KernelBuilder)
//! rather than `#[kernel]`: the `wgmma` GEMM fed by `cp.async` (Hopper strides the copy engine
//! cannot address), not yet ported, and the `mma.sync` GEMM, kept only to be timed beside its
//! `#[kernel]` port.
//!
//! Nothing here runs in a user's process. The `kernels` crate's build script calls
//! [`library`], emits each kernel's PTX for the enabled targets, assembles cubins where ptxas
//! is found and embeds both, as `#[kernel]` does for the kernels written in the language. The
//! `kernels` crate also depends on this crate for the spec tables and constants its host code
//! selects and launches with, so the two can never disagree.

pub mod codegen;
mod float_type;
pub mod gemm;

pub use float_type::FloatType;

use kernel_dsl::ir::Kernel;

/// One table of specializations: `name` is the Rust name of the generated static array
/// (`GEMM_MMA`), and entry `i` of the array is `kernels[i]`.
pub struct Table {
    pub name: &'static str,
    pub kernels: Vec<Kernel>,
}

/// Every kernel this crate generates, table by table.
pub fn library() -> Vec<Table> {
    use gemm::*;
    vec![
        Table {
            name: "GEMM_MMA",
            kernels: tensor_core::MMA_SPECS.map(tensor_core::build_mma).to_vec(),
        },
        Table {
            name: "GEMM_WGMMA",
            kernels: wgmma::WGMMA_SPECS.map(wgmma::build_wgmma).to_vec(),
        },
    ]
}
