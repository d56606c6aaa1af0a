//! ptxkit: write GPU kernels in Rust, get PTX for every SM target you enable.
//!
//! This facade re-exports the workspace crates. Start with [`dsl`] (the IR and emitter).

pub use kernel_dsl as dsl;
pub use kernel_runtime as runtime;
pub use kernels;
pub use ptx_emulator as emulator;
pub use ptx_parser as parser;
