//! ptxkit: write GPU kernels in Rust, get PTX for every SM target you enable.
//!
//! This facade re-exports the workspace crates. Start with [`prelude`] (`#[kernel]` and the
//! intrinsics) or [`dsl`] (the IR and emitter).
//!
//! # Seeing your kernels' PTX and ptxas report
//!
//! Every `#[kernel]` instance has a static named after it in capitals, holding the PTX for
//! each target the build enabled and an emitter for any other; [`dsl::ptxas::Ptxas`]
//! assembles a module and reads ptxas's registers, spills and shared memory:
//!
//! ```
//! use ptxkit::dsl::{ptxas::Ptxas, Target};
//! use ptxkit::prelude::*;
//!
//! #[kernel]
//! pub fn scale(x: &mut [f32], s: f32, n: u32) {
//!     let i = block_idx().x * block_dim().x + thread_idx().x;
//!     if i < n {
//!         x[i] = x[i] * s;
//!     }
//! }
//!
//! # fn main() -> Result<(), ptxkit::dsl::Error> {
//! // Embedded for sm_80, the target of a build that enables no `sm_*` feature ...
//! let embedded = SCALE.ptx_for(Target::Sm80).expect("built for sm_80");
//! assert!(embedded.contains(".target sm_80"));
//! // ... and emitted now for a target the build did not enable.
//! let ptx = (SCALE.emit.expect("every #[kernel] has an emitter"))(Target::Sm90)?;
//! assert!(ptx.contains(".entry scale"));
//! if let Some(ptxas) = Ptxas::find() {
//!     for r in ptxas.assemble(&ptx)?.reports {
//!         println!(
//!             "{}: {} registers, {} bytes spilled, {} bytes shared",
//!             r.entry,
//!             r.registers,
//!             r.spill_stores + r.spill_loads,
//!             r.shared_bytes
//!         );
//!     }
//! }
//! # Ok(()) }
//! ```

// Modules with glob re-exports rather than `pub use kernel_runtime as runtime`: rustc names a
// type by the path it finds, and through a renamed crate that is `ptxkit::kernel_runtime::…`,
// which a user cannot write. Through a module it is `ptxkit::runtime::…`.

/// The IR, the emitter, targets and ptxas (the `kernel-dsl` crate).
pub mod dsl {
    #[doc(inline)]
    pub use kernel_dsl::*;
}

/// Devices, buffers, streams and launches on CUDA or the CPU emulator (the `kernel-runtime`
/// crate).
pub mod runtime {
    #[doc(inline)]
    pub use kernel_runtime::*;
}

/// The CPU PTX emulator (the `ptx-emulator` crate).
pub mod emulator {
    #[doc(inline)]
    pub use ptx_emulator::*;
}

/// The PTX parser (the `ptx-parser` crate).
pub mod parser {
    #[doc(inline)]
    pub use ptx_parser::*;
}

pub use kernels;

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

pub mod gguf;
pub mod model;
pub mod selfcheck;
pub mod serve;
pub mod train;
