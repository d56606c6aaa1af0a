//! ptxkit: write GPU kernels in Rust, get PTX for every SM target you enable.
//!
//! This facade re-exports the workspace crates. Start with [`dsl`] (the IR and emitter).

pub use kernel_dsl as dsl;
pub use kernel_runtime as runtime;
pub use kernels;
pub use ptx_emulator as emulator;
pub use ptx_parser as parser;

/// Every kernel this build can emit, in a fixed order: the builder samples.
pub fn available_kernels() -> Vec<kernel_dsl::ir::Kernel> {
    kernel_dsl::samples::all().into_iter().map(|s| s.kernel).collect()
}
