//! Builder conveniences shared by the op kernels, on top of the builder's raw layer:
//! storage-generic tensor access with 16-byte vectors (`tensor`), bf16 packing (`bf16`),
//! warp and block reductions (`reduce`), float helpers (`math`), and the row loop of row-wise
//! kernels (`rows`). Every helper emits only instructions the CPU emulator executes.

pub(crate) mod guarded;
pub(crate) mod map;
pub(crate) mod multi_sum;
pub(crate) mod reduce;
pub(crate) mod rows;

// Shared with the GEMMs, which are built from `kernels-gen` at build time.
pub(crate) use kernels_gen::codegen::{bf16, fresh, half, math, tensor};

/// Declares a table of kernel specializations: entry `i` is built by `$build($specs[i])`.
///
/// `kernel_table!(pub(crate) static FORWARD = build_fn, SPECS, [0 1 2 3]);`
macro_rules! kernel_table {
    ($vis:vis static $table:ident = $build:path, $specs:expr, [$($i:literal)*]) => {
        $vis static $table: [crate::OpKernel; [$($i),*].len()] =
            [$(crate::OpKernel::new(|| $build($specs[$i]))),*];
    };
}

/// `&[&A[0], &A[1], …, &B[0], …]` for a module's `KERNELS` list.
macro_rules! kernel_refs {
    ($($table:ident [$($i:literal)*]),* $(,)?) => {
        &[$($(&$table[$i]),*),*]
    };
}

pub(crate) use {kernel_refs, kernel_table};
