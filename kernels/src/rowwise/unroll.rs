//! Overflow loops that keep several loads in flight: each iteration visits [`unroll_chunks`]
//! chunks of the thread's share of a row and issues all their loads before using any, so a
//! thread streaming a very wide row (a vocabulary) hides memory latency.

use crate::codegen::rows::Row;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{Pred, F32, U32};
use kernel_dsl::op::Cmp;

/// Elements a thread loads per iteration of an overflow loop with scalar access.
pub(crate) const UNROLL_ELEMS: u32 = 16;
/// Elements a thread loads per iteration with 16-byte vector access: 8 vectors of f32 or 4 of
/// bf16, so 64-128 bytes per thread are in flight (a CTA of 512 threads alone keeps 32-64 KiB
/// in flight on its SM).
pub(crate) const UNROLL_VECTOR_ELEMS: u32 = 32;

/// Chunks of `elems_per_chunk` elements a thread loads per iteration of an overflow loop.
pub(crate) const fn unroll_chunks(elems_per_chunk: u32) -> u32 {
    if elems_per_chunk == 1 {
        UNROLL_ELEMS
    } else {
        UNROLL_VECTOR_ELEMS / elems_per_chunk
    }
}

/// One chunk of an unrolled iteration: its index and whether it lies inside the row.
pub(crate) type Slot = (Value<U32>, Value<Pred>);

/// Runs `body` over this thread's chunks `lane + k·width` for `k ≥ first`, below `nchunks`,
/// [`unroll_chunks`] of them per iteration (in increasing order).
pub(crate) fn for_chunk_groups(
    b: &mut KernelBuilder,
    row: &Row,
    first: u32,
    nchunks: Value<U32>,
    elems_per_chunk: u32,
    body: impl FnOnce(&mut KernelBuilder, &[Slot]),
) {
    let (start, step, unroll) = group_stride(b, row, first, elems_per_chunk);
    b.for_range(start, nchunks, step, |b, c| {
        let slots = slots_at(b, row, c, nchunks, unroll);
        body(b, &slots)
    });
}

/// Like [`for_chunk_groups`], visiting the same groups last to first. A second pass over a row
/// that does not fit in registers goes this way so that it first meets the chunks the first
/// pass read last, the ones most likely still in L2.
pub(crate) fn for_chunk_groups_rev(
    b: &mut KernelBuilder,
    row: &Row,
    first: u32,
    nchunks: Value<U32>,
    elems_per_chunk: u32,
    body: impl FnOnce(&mut KernelBuilder, &[Slot]),
) {
    let (start, step, unroll) = group_stride(b, row, first, elems_per_chunk);
    // Groups this thread visits: ⌈(nchunks − start) / step⌉, or none past the row.
    let zero = b.const_u32(0);
    let one = b.const_u32(1);
    let inside = b.setp(Cmp::Lt, start, nchunks);
    let span = b.sub(nchunks, start);
    let span = b.selp(inside, span, zero);
    let rounded = b.add(span, step);
    let rounded = b.sub(rounded, one);
    let groups = b.div(rounded, step);
    b.for_range(zero, groups, one, |b, g| {
        let last = b.sub(groups, one);
        let back = b.sub(last, g);
        let c = b.mad(back, step, start);
        let slots = slots_at(b, row, c, nchunks, unroll);
        body(b, &slots)
    });
}

/// This thread's first chunk, the stride between its groups, and chunks per group.
fn group_stride(
    b: &mut KernelBuilder,
    row: &Row,
    first: u32,
    elems_per_chunk: u32,
) -> (Value<U32>, Value<U32>, u32) {
    let unroll = unroll_chunks(elems_per_chunk).max(1);
    let k = b.const_u32(first);
    let start = b.mad(k, row.width, row.lane);
    let u = b.const_u32(unroll);
    let step = b.mul(row.width, u);
    (start, step, unroll)
}

/// The `unroll` chunks of the group starting at chunk `c`.
fn slots_at(
    b: &mut KernelBuilder,
    row: &Row,
    c: Value<U32>,
    nchunks: Value<U32>,
    unroll: u32,
) -> Vec<Slot> {
    (0..unroll)
        .map(|i| {
            let ci = if i == 0 {
                c
            } else {
                let i = b.const_u32(i);
                b.mad(i, row.width, c)
            };
            (ci, b.setp(Cmp::Lt, ci, nchunks))
        })
        .collect()
}

/// Loads every active slot with `load` (all loads before any use); inactive slots hold `fill`.
pub(crate) fn load_slots(
    b: &mut KernelBuilder,
    slots: &[Slot],
    elems_per_chunk: u32,
    fill: f32,
    load: impl Fn(&mut KernelBuilder, Value<U32>) -> Vec<Value<F32>>,
) -> Vec<Vec<Value<F32>>> {
    let f = b.const_f32(fill);
    slots
        .iter()
        .map(|&(c, active)| {
            let vars: Vec<Value<F32>> = (0..elems_per_chunk).map(|_| b.var(f)).collect();
            b.if_(active, |b| {
                for (&var, v) in vars.iter().zip(load(b, c)) {
                    b.assign(var, v);
                }
            });
            vars
        })
        .collect()
}
