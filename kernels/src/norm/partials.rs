//! Deterministic column sums for the γ/β gradients: each block of a backward kernel owns one
//! row of a `parts × cols` f32 workspace (no atomics); `column_sum_kernel` then adds the rows
//! of each column in index order. The sizes both sides agree on.

/// Most blocks a backward launch uses, so the workspace is at most this many rows: about two
/// waves of two 512-thread blocks per SM on a 132-SM GPU, each block looping over many rows,
/// while the column sums read half what 1024 partial rows would cost.
pub(crate) const MAX_PARTS: u32 = 512;

/// Threads of a column-sum CTA: [`SUM_COLS`] columns × [`SUM_LANES`] interleaved shares of
/// the parts.
pub(crate) const SUM_THREADS: u32 = SUM_COLS * SUM_LANES;
/// Columns per column-sum CTA (one warp's width, so each load is one 128-byte line).
pub(crate) const SUM_COLS: u32 = 32;
/// Shares of the parts per column: a whole warp's worth, so a column sum CTA has 1024 threads
/// (each column-sum CTA is alone on its SM; `cols / 32` of them barely fill the GPU).
const SUM_LANES: u32 = 32;
