//! Row-to-row prefetch for the backward norm kernels, whose CTAs loop over rows `ctaid,
//! ctaid + nctaid, …`: while a CTA reduces and writes one row, the loads of its next row's held
//! chunks are already in flight, so it never waits a whole memory round trip at the top of a
//! row, and an SM keeps two rows' worth of loads outstanding per CTA.

use super::row_io::element;
use crate::codegen::guarded::RawChunk;
use crate::codegen::tensor::{Access, Tensor};
use crate::rowwise::bits::and_pred;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{Pred, U32};

/// Register cap of the backward norm kernels: two 512-thread CTAs per SM (64 K registers), so
/// one CTA's reductions overlap the other's loads. Holding a second row's chunks, or the
/// LayerNorm kernel's four sums, would otherwise take ptxas past it (to one CTA per SM).
pub(crate) const BACKWARD_MAX_REGS: u32 = 64;

/// Whether a backward kernel prefetches, given its access, its held chunks' registers per
/// thread and tensor (as loaded) and its per-column accumulators per thread: only 16-byte
/// chunks (a scalar chunk costs an address per element), and only where two rows of x and dy
/// fit well under [`BACKWARD_MAX_REGS`] beside the accumulators. That admits the bf16 kernels
/// (one chunk per tensor). f32 RMSNorm (two chunks, already 32 KB of x and dy in flight per
/// CTA) would fit without spilling, but measured slower with it on an H200 (88–89% of copy
/// against 93–94%), and f32 LayerNorm does not fit.
pub(crate) fn prefetches(access: Access, held_words: u32, accumulators: u32) -> bool {
    access == Access::Vector && 4 * held_words + accumulators <= 32
}

/// The next row's held chunks of several tensors, loads in flight.
pub(crate) struct Prefetch<'a> {
    tensors: Vec<&'a Tensor>,
    /// This thread's held chunks and whether each lies inside a row.
    slots: Vec<(Value<U32>, Value<Pred>)>,
    /// `next[slot][tensor]`.
    next: Vec<Vec<RawChunk>>,
    width: u32,
    cols: Value<U32>,
}

impl<'a> Prefetch<'a> {
    /// Registers for the held chunks of `tensors` (row-major, `cols` wide), nothing loaded.
    pub(crate) fn new(
        b: &mut KernelBuilder,
        tensors: Vec<&'a Tensor>,
        slots: Vec<(Value<U32>, Value<Pred>)>,
        access: Access,
        width: u32,
        cols: Value<U32>,
    ) -> Prefetch<'a> {
        let next = slots
            .iter()
            .map(|_| {
                tensors
                    .iter()
                    .map(|t| RawChunk::zeroed(b, t.format(), access))
                    .collect()
            })
            .collect();
        Prefetch {
            tensors,
            slots,
            next,
            width,
            cols,
        }
    }

    /// Issues the loads of row `row`'s held chunks (none where `row ≥ rows`).
    pub(crate) fn issue(&self, b: &mut KernelBuilder, row: Value<U32>, rows: Value<U32>) {
        let exists = b.setp(Cmp::Lt, row, rows);
        // Past the last row the product may wrap; the loads are then off anyway.
        let base = b.mul(row, self.cols);
        for (&(c, active), raws) in self.slots.iter().zip(&self.next) {
            let pred = and_pred(b, active, exists);
            let idx = element(b, base, c, self.width);
            for (t, raw) in self.tensors.iter().zip(raws) {
                raw.load_into(b, t, idx, pred);
            }
        }
    }

    /// The chunks loaded by the last [`Prefetch::issue`], copied out so the next issue can
    /// reuse the registers: `[slot][tensor]`.
    pub(crate) fn take(&self, b: &mut KernelBuilder) -> Vec<Vec<RawChunk>> {
        self.next
            .iter()
            .map(|raws| raws.iter().map(|r| r.copied(b)).collect())
            .collect()
    }
}
