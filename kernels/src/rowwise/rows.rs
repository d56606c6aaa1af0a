//! How the row-wise kernels share out a row. A row belongs to one *group* of threads: a warp
//! (narrow rows; reductions are shuffles only) or the whole block (wide rows). Each thread
//! keeps [`HELD_ELEMS`] elements of its row in registers ("held" chunks) between a reduction
//! and the write that needs it; any part of a row beyond that is read again. The kernels
//! (`#[kernel]`, with the `row_group` helpers) and their host launch plans agree on these
//! counts.

use super::Access;
use crate::FloatType;
use kernel_runtime::LaunchConfig;

/// Elements of its row each thread holds in registers.
pub(crate) const HELD_ELEMS: u32 = 16;
/// Threads per CTA of the warp-per-row specializations.
pub(crate) const WARP_ROWS_THREADS: u32 = 128;
/// Most threads of a CTA-per-row launch. The row kernels use up to 82 registers, and
/// 82 × 1024 would not fit an SM's 64 K registers; wider rows re-read their overflow. (The
/// kernels declare no `.maxntid`: given one, ptxas trims registers for more CTAs per SM and
/// spills.)
pub(crate) const MAX_ROW_THREADS: u32 = 512;

/// Which threads share one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Group {
    Warp,
    Block,
}

/// Elements each thread holds in kernels that keep several tensors per element (backward
/// passes), to keep register use, and so occupancy, in line with the forward kernels.
pub(crate) const BACKWARD_HELD_ELEMS: u32 = 8;

/// Held chunks (accesses) per thread.
pub(crate) const fn held_chunks(storage: FloatType, access: Access) -> u32 {
    held_chunks_of(storage, access, HELD_ELEMS)
}

/// Held chunks per thread when each thread holds `elems` elements (at least one chunk).
pub(crate) const fn held_chunks_of(storage: FloatType, access: Access, elems: u32) -> u32 {
    let n = elems / access.width(storage);
    if n == 0 {
        1
    } else {
        n
    }
}

/// Chunks of its row each thread of most row kernels (the embedding, the layout moves)
/// holds in registers: four 16-byte vectors (16 f32 or 32 bf16, so a bf16 row keeps as many
/// bytes in flight per thread as an f32 one), or the shared default for scalar access.
pub(crate) const fn row_held_chunks(storage: FloatType, access: Access) -> u32 {
    match access {
        Access::Vector => 4,
        Access::Scalar => held_chunks(storage, access),
    }
}

/// How a row-wise op is launched for a problem of `rows` rows of `nchunks` accesses each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowLaunch {
    pub group: Group,
    pub cfg: LaunchConfig,
}

/// Rows that fit in one warp's registers go warp-per-row; wider rows get a CTA sized so each
/// thread holds its share (up to [`MAX_ROW_THREADS`], beyond which rows are re-read).
/// `max_groups` caps the grid (a CTA then loops over rows).
pub(crate) fn plan_rows(rows: u32, nchunks: u32, held: u32, max_ctas: Option<u32>) -> RowLaunch {
    plan_rows_within(rows, nchunks, held, max_ctas, MAX_ROW_THREADS)
}

/// [`plan_rows`] for a kernel whose CTA-per-row form runs up to `max_threads` threads (one
/// that stays within 64 registers a thread can hold a wider row before re-reading it).
pub(crate) fn plan_rows_within(
    rows: u32,
    nchunks: u32,
    held: u32,
    max_ctas: Option<u32>,
    max_threads: u32,
) -> RowLaunch {
    // The grid's x dimension holds at most 2³¹ − 1 CTAs; the row loop strides over the rest.
    let cap = |g: u32| max_ctas.map_or(g, |m| g.min(m)).clamp(1, i32::MAX as u32);
    if nchunks <= 32 * held && max_ctas.is_none() {
        let per_cta = WARP_ROWS_THREADS / 32;
        return RowLaunch {
            group: Group::Warp,
            cfg: LaunchConfig::linear(cap(rows.div_ceil(per_cta)), WARP_ROWS_THREADS),
        };
    }
    let threads = nchunks
        .div_ceil(held)
        .div_ceil(32)
        .clamp(1, max_threads / 32)
        * 32;
    RowLaunch {
        group: Group::Block,
        cfg: LaunchConfig::linear(cap(rows), threads),
    }
}
