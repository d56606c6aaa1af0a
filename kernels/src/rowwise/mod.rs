//! Host-side planning of the row-wise ops, whose kernels are `#[kernel]` instances: how a row
//! is shared out among threads (`rows`), and the checks and launch of a problem, with the
//! instance (access width, block or warp per row) that runs it (`problem`).

pub(crate) mod problem;
pub(crate) mod rows;

/// Whether a row moves in 16-byte vectors or one element at a time.
pub(crate) use kernels_gen::codegen::tensor::Access;
