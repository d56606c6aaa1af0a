//! One specialization of a library op, as the `&'static` [`KernelArtifacts`] the runtime loads.
//! A `#[kernel]` instance is its generated static (PTX for the enabled targets, cubins, the IR),
//! and so is a GEMM still written with the builder: the build script builds `kernels-gen`'s
//! tables the same way ([`OpKernel::embedded`]). Nothing is emitted at run time for a target
//! the build enabled.

use kernel_dsl::ir::Kernel;
use kernel_dsl::KernelArtifacts;

/// One compile-time specialization of an op (storage type, block size, vector width): a
/// `#[kernel]` instance or a `kernels-gen` kernel, built with the crate.
#[derive(Clone, Copy)]
pub struct OpKernel {
    artifacts: &'static KernelArtifacts,
}

impl OpKernel {
    /// Wraps a `#[kernel]` instance's generated artifacts.
    pub const fn language(artifacts: &'static KernelArtifacts) -> OpKernel {
        OpKernel { artifacts }
    }

    /// A table the build script built from `kernels-gen` (`builder_kernels.rs`), wrapped.
    pub const fn embedded<const N: usize>(table: &'static [KernelArtifacts; N]) -> [OpKernel; N] {
        // Every table has entries; the first fills the array until each slot is set.
        let mut out = [OpKernel::language(&table[0]); N];
        let mut i = 0;
        while i < N {
            out[i] = OpKernel::language(&table[i]);
            i += 1;
        }
        out
    }

    /// Every instance of a `#[kernel]` (its generated `…_INSTANCES` array), wrapped.
    pub const fn instances<const N: usize>(all: [&'static KernelArtifacts; N]) -> [OpKernel; N] {
        let mut out = [OpKernel::language(all[0]); N];
        let mut i = 0;
        while i < N {
            out[i] = OpKernel::language(all[i]);
            i += 1;
        }
        out
    }

    /// The kernel's IR, as embedded at build time.
    pub fn kernel(&self) -> Kernel {
        match self.artifacts.kernel() {
            Some(Ok(k)) => k,
            // The build always embeds IR that this version of kernel-dsl reads.
            Some(Err(e)) => panic!("{}: {e}", self.artifacts.meta.entry),
            None => panic!("{}: no IR embedded", self.artifacts.meta.entry),
        }
    }

    /// The artifacts the runtime loads and pre-warms: PTX for the enabled targets, cubins
    /// where ptxas was found at build time, and the IR for any other target.
    pub fn artifacts(&self) -> &'static KernelArtifacts {
        self.artifacts
    }
}

/// `&[&A[0], &A[1], …, &B[0], …]` for a module's `KERNELS` list.
macro_rules! kernel_refs {
    ($($table:ident [$($i:literal)*]),* $(,)?) => {
        &[$($(&$table[$i]),*),*]
    };
}

pub(crate) use kernel_refs;
