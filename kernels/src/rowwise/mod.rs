//! Builder conveniences of the row-wise ops (softmax, cross-entropy, argmax): their
//! compile-time specializations, chunk index arithmetic, max and arg-max reductions over a
//! row's group of threads, and host-side launch planning. Sums, tensors and the row loop come
//! from `codegen`.

pub(crate) mod bits;
pub(crate) mod index;
pub(crate) mod moves;
pub(crate) mod online;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod spec;
pub(crate) mod unroll;
