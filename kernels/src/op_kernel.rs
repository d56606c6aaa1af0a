//! A kernel specialization written with the builder, turned into the `&'static`
//! [`KernelArtifacts`] the runtime loads: PTX for every target the kernel supports, emitted once
//! on first use from the same IR, with metadata derived from that IR.

use kernel_dsl::ir::Kernel;
use kernel_dsl::KernelArtifacts;
use std::sync::OnceLock;

/// One compile-time specialization of an op (storage type, block size, vector width).
pub struct OpKernel {
    build: fn() -> Kernel,
    artifacts: OnceLock<KernelArtifacts>,
}

impl OpKernel {
    /// Wraps a builder function; nothing runs until first use.
    pub const fn new(build: fn() -> Kernel) -> OpKernel {
        OpKernel {
            build,
            artifacts: OnceLock::new(),
        }
    }

    /// The kernel's IR.
    pub fn kernel(&self) -> Kernel {
        (self.build)()
    }

    /// The artifacts the runtime loads and pre-warms. The PTX for each target is emitted once
    /// per process and kept for its lifetime (the set of specializations is finite).
    pub fn artifacts(&'static self) -> &'static KernelArtifacts {
        self.artifacts
            .get_or_init(|| KernelArtifacts::from_kernel(&(self.build)()))
    }
}
