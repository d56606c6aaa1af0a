//! The row-wise ops' host-side launch planning (`problem`, for the `#[kernel]` row kernels),
//! and the builder conveniences of those not yet ported (cross-entropy, argmax): their
//! compile-time specializations, chunk index arithmetic, max and arg-max reductions over a
//! row's group of threads. Sums, tensors and the row loop come from `codegen`.

pub(crate) mod bits;
pub(crate) mod index;
pub(crate) mod moves;
pub(crate) mod online;
pub(crate) mod problem;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod spec;
pub(crate) mod unroll;
