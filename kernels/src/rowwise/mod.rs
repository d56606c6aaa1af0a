//! Host-side planning of the row-wise ops, whose kernels are `#[kernel]` instances: how a row
//! is shared out among threads (`rows`), the checks and launch of a problem (`problem`, and
//! `shape` for the ops that pick an instance by storage, access and group).

pub(crate) mod problem;
pub(crate) mod rows;
pub(crate) mod shape;

/// Whether a row moves in 16-byte vectors or one element at a time.
pub(crate) use kernels_gen::codegen::tensor::Access;
