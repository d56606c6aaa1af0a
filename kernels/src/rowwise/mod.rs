//! The row-wise ops' host-side launch planning (`problem`, for the `#[kernel]` row kernels),
//! and the builder conveniences of the builder kernels still kept beside their ports (argmax,
//! the axis swap): their compile-time specializations, chunk index arithmetic and the arg-max
//! reduction over a row's group of threads. Sums, tensors and the row loop come from `codegen`.

pub(crate) mod bits;
pub(crate) mod index;
pub(crate) mod moves;
pub(crate) mod problem;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod spec;
