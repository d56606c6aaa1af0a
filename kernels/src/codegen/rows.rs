//! The row loop of row-wise kernels. A row belongs to one *group* of threads: a warp (narrow
//! rows; reductions are shuffles only) or the whole CTA (wide rows). Each thread keeps
//! [`HELD_ELEMS`] elements of its row in registers ("held" chunks) between a reduction and the
//! write that needs it; any part of a row beyond that is read again ("overflow" chunks).

use super::reduce::{warp_sum, BlockSum};
use super::tensor::Access;
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::Dim;
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{Pred, F32, U32};
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

impl Group {
    pub(crate) const fn tag(self) -> &'static str {
        match self {
            Group::Warp => "warp",
            Group::Block => "cta",
        }
    }
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

/// Where a thread stands in the row it is working on.
#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub row: Value<U32>,
    /// This thread's index within its group.
    pub lane: Value<U32>,
    /// Threads in the group.
    pub width: Value<U32>,
}

/// Runs `body` for each row this thread's group owns: rows are dealt out group by group, then
/// strided by the number of groups in the grid. For `Group::Block` the loop is CTA-uniform,
/// so `body` may hold barriers.
pub(crate) fn for_each_row(
    b: &mut KernelBuilder,
    group: Group,
    rows: Value<U32>,
    body: impl FnOnce(&mut KernelBuilder, Row),
) {
    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    let ctaid = b.ctaid(Dim::X);
    let nctaid = b.nctaid(Dim::X);
    match group {
        Group::Block => b.for_range(ctaid, rows, nctaid, |b, row| {
            body(
                b,
                Row {
                    row,
                    lane: tid,
                    width: ntid,
                },
            )
        }),
        Group::Warp => {
            let c31 = b.const_u32(31);
            let lane = b.and(tid, c31);
            let warp = b.shr(tid, 5);
            let per_cta = b.shr(ntid, 5);
            let start = b.mad(ctaid, per_cta, warp);
            let step = b.mul(nctaid, per_cta);
            let width = b.const_u32(32);
            b.for_range(start, rows, step, |b, row| {
                body(b, Row { row, lane, width })
            });
        }
    }
}

/// Sums over a group.
pub(crate) enum GroupSum {
    Warp,
    Block(BlockSum),
}

impl GroupSum {
    /// Sums of up to `lanes` values at once.
    pub(crate) fn new(b: &mut KernelBuilder, group: Group, lanes: u32) -> GroupSum {
        match group {
            Group::Warp => GroupSum::Warp,
            Group::Block => GroupSum::Block(BlockSum::new(b, "row_sums", lanes)),
        }
    }

    /// The group's sums of `vals`, in every thread of the group.
    pub(crate) fn sum(&self, b: &mut KernelBuilder, vals: &[Value<F32>]) -> Vec<Value<F32>> {
        match self {
            GroupSum::Warp => vals.iter().map(|&v| warp_sum(b, v)).collect(),
            GroupSum::Block(s) => s.sum(b, vals),
        }
    }
}

/// The held chunk indices of this thread (`lane + k·width`, k < `count`) and whether each is
/// inside the row's `nchunks`.
pub(crate) fn held(
    b: &mut KernelBuilder,
    row: &Row,
    nchunks: Value<U32>,
    count: u32,
) -> Vec<(Value<U32>, Value<Pred>)> {
    (0..count)
        .map(|k| {
            let k = b.const_u32(k);
            let c = b.mad(k, row.width, row.lane);
            let active = b.setp(Cmp::Lt, c, nchunks);
            (c, active)
        })
        .collect()
}

/// Runs `body` for each overflow chunk of this thread (from `lane + count·width`, strided by
/// `width`, below `nchunks`).
pub(crate) fn for_overflow(
    b: &mut KernelBuilder,
    row: &Row,
    nchunks: Value<U32>,
    count: u32,
    body: impl FnOnce(&mut KernelBuilder, Value<U32>),
) {
    let k = b.const_u32(count);
    let start = b.mad(k, row.width, row.lane);
    b.for_range(start, nchunks, row.width, body);
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
