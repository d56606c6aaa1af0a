//! One specialization of a library op, as the `&'static` [`KernelArtifacts`] the runtime loads.
//! A `#[kernel]` instance is its generated static (PTX for the enabled targets, cubins, the IR),
//! and so is a GEMM still written with the builder: the build script builds `kernels-gen`'s
//! tables the same way ([`OpKernel::embedded`]). A builder kernel kept only to be measured
//! beside its `#[kernel]` port emits PTX for every target it supports once, on first use.

use kernel_dsl::ir::Kernel;
use kernel_dsl::KernelArtifacts;
use std::sync::OnceLock;

/// Where a specialization comes from.
enum Source {
    /// A builder function, run on first use.
    Builder(fn() -> Kernel),
    /// Built at build time: a `#[kernel]` instance, or a `kernels-gen` kernel.
    Embedded(&'static KernelArtifacts),
}

/// One compile-time specialization of an op (storage type, block size, vector width).
pub struct OpKernel {
    source: Source,
    artifacts: OnceLock<KernelArtifacts>,
}

impl OpKernel {
    /// Wraps a builder function; nothing runs until first use.
    pub const fn new(build: fn() -> Kernel) -> OpKernel {
        OpKernel {
            source: Source::Builder(build),
            artifacts: OnceLock::new(),
        }
    }

    /// Wraps a `#[kernel]` instance's generated artifacts.
    pub const fn language(artifacts: &'static KernelArtifacts) -> OpKernel {
        OpKernel {
            source: Source::Embedded(artifacts),
            artifacts: OnceLock::new(),
        }
    }

    /// A table the build script built from `kernels-gen` (`builder_kernels.rs`), wrapped.
    pub const fn embedded<const N: usize>(table: &'static [KernelArtifacts; N]) -> [OpKernel; N] {
        let mut out = [const { OpKernel::new(kernel_dsl::samples::vector_add) }; N];
        let mut i = 0;
        while i < N {
            std::mem::forget(std::mem::replace(
                &mut out[i],
                OpKernel::language(&table[i]),
            ));
            i += 1;
        }
        out
    }

    /// Every instance of a `#[kernel]` (its generated `…_INSTANCES` array), wrapped.
    pub const fn instances<const N: usize>(all: [&'static KernelArtifacts; N]) -> [OpKernel; N] {
        let mut out = [const { OpKernel::new(kernel_dsl::samples::vector_add) }; N];
        let mut i = 0;
        while i < N {
            // The placeholder (a sample, never built) holds nothing to drop, but const code
            // may not run destructors.
            std::mem::forget(std::mem::replace(&mut out[i], OpKernel::language(all[i])));
            i += 1;
        }
        out
    }

    /// The artifacts as built with the crate (PTX for the enabled targets, cubins where ptxas
    /// was found); `None` for a builder kernel kept for measurement, which emits at first use.
    pub fn built_in(&self) -> Option<&'static KernelArtifacts> {
        match self.source {
            Source::Embedded(a) => Some(a),
            Source::Builder(_) => None,
        }
    }

    /// The kernel's IR.
    pub fn kernel(&self) -> Kernel {
        match self.source {
            Source::Builder(build) => build(),
            Source::Embedded(a) => match a.kernel() {
                Some(Ok(k)) => k,
                // The build always embeds IR that this version of kernel-dsl reads.
                Some(Err(e)) => panic!("{}: {e}", a.meta.entry),
                None => panic!("{}: no IR embedded", a.meta.entry),
            },
        }
    }

    /// The artifacts the runtime loads and pre-warms. A builder kernel's PTX for each target is
    /// emitted once per process and kept for its lifetime (the set of specializations is
    /// finite); a `#[kernel]` instance's was embedded at build time.
    pub fn artifacts(&'static self) -> &'static KernelArtifacts {
        match self.source {
            Source::Embedded(a) => a,
            Source::Builder(build) => self
                .artifacts
                .get_or_init(|| KernelArtifacts::from_kernel(&build())),
        }
    }
}

/// `&[&A[0], &A[1], …, &B[0], …]` for a module's `KERNELS` list.
macro_rules! kernel_refs {
    ($($table:ident [$($i:literal)*]),* $(,)?) => {
        &[$($(&$table[$i]),*),*]
    };
}

pub(crate) use kernel_refs;
