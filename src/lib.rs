//! ptxkit: write GPU kernels in Rust, get PTX for every SM target you enable.
//!
//! This facade re-exports the workspace crates. Start with [`prelude`] (`#[kernel]` and the
//! intrinsics) or [`dsl`] (the IR and emitter).

pub use kernel_dsl as dsl;
pub use kernel_runtime as runtime;
pub use kernels;
pub use ptx_emulator as emulator;
pub use ptx_parser as parser;

pub mod prelude;

#[doc(hidden)]
pub use kernel_macros::__kernel_expand;

/// Every kernel this build can emit, in a fixed order: the builder samples, then the op
/// library's specializations.
pub fn available_kernels() -> Vec<kernel_dsl::ir::Kernel> {
    let samples = kernel_dsl::samples::all().into_iter().map(|s| s.kernel);
    samples
        .chain(kernels::all_kernels().into_iter().map(|k| k.kernel()))
        .collect()
}

pub mod selfcheck;
pub mod train;
