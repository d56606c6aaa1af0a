//! Appending new keys or values to a paged KV cache through a block table.
//!
//! The cache is `[num_blocks, block_size, width]` (`width` = KV heads × head dim, each token
//! one contiguous row). Token `t` belongs to sequence `seq_ids[t]` at position
//! `positions[t]`; its row goes to slot `position mod block_size` of physical block
//! `block_table[seq · blocks_per_seq + position / block_size]`.

use super::paged_kernel;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::{row_held_chunks, Group};
use crate::rowwise::Access;
use crate::{check_len, Error, Float, FloatType};
use kernel_runtime::{Buffer, Stream};

/// The shape of a paged cache and its block table.
///
/// ```
/// let layout = kernels::layout::PagedLayout {
///     num_blocks: 64, block_size: 16, width: 8 * 128, seqs: 4, blocks_per_seq: 16,
/// };
/// assert_eq!(layout.cache_len(), 64 * 16 * 8 * 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagedLayout {
    /// Physical blocks in the cache.
    pub num_blocks: usize,
    /// Tokens per block.
    pub block_size: usize,
    /// Elements per token (KV heads × head dim).
    pub width: usize,
    /// Sequences in the block table.
    pub seqs: usize,
    /// Block-table entries per sequence.
    pub blocks_per_seq: usize,
}

impl PagedLayout {
    /// Elements of the cache buffer (saturating at `usize::MAX`, which no buffer holds, so the
    /// ops refuse a layout that large with an error).
    pub fn cache_len(&self) -> usize {
        self.num_blocks
            .saturating_mul(self.block_size)
            .saturating_mul(self.width)
    }
}

/// Writes each of `tokens` rows of `new` (`tokens × width`) into the paged `cache`, at the slot
/// its sequence and position map to through `block_table` (`seqs × blocks_per_seq` block
/// indices). Tokens whose sequence, block-table entry or block falls outside the layout are
/// skipped (the table lives on the device, so it cannot be checked before launch).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::layout::{kv_cache_append, PagedLayout};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let layout = PagedLayout { num_blocks: 2, block_size: 2, width: 1, seqs: 1, blocks_per_seq: 2 };
/// let new = Buffer::from_host(&stream, &[7.0f32, 8.0])?;
/// let seq_ids = Buffer::from_host(&stream, &[0u32, 0])?;
/// let positions = Buffer::from_host(&stream, &[1u32, 2])?; // slot 1 of block 0, slot 0 of block 1
/// let table = Buffer::from_host(&stream, &[1u32, 0])?; // logical 0 → physical 1, 1 → 0
/// let mut cache = Buffer::<f32>::zeros(&stream, 4)?;
/// kv_cache_append(&stream, &new, &seq_ids, &positions, &table, &mut cache, 2, layout)?;
/// assert_eq!(cache.to_host(&stream)?, vec![8.0, 0.0, 0.0, 7.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn kv_cache_append<T: Float>(
    stream: &Stream,
    new: &Buffer<T>,
    seq_ids: &Buffer<u32>,
    positions: &Buffer<u32>,
    block_table: &Buffer<u32>,
    cache: &mut Buffer<T>,
    tokens: usize,
    layout: PagedLayout,
) -> Result<(), Error> {
    let lens = [
        new.len(),
        seq_ids.len(),
        positions.len(),
        block_table.len(),
        cache.len(),
    ];
    let held = |storage: FloatType, access: Access| {
        let vector = Access::Vector.width(storage);
        paged_kernel::held_chunks(vector, access.width(storage))
    };
    let Some(p) = plan(T::TYPE, lens, tokens, layout, held)? else {
        return Ok(());
    };
    paged_kernel::kv_cache_append::<T>(
        stream,
        p.launch.cfg,
        p.access.width(T::TYPE),
        (p.group() == Group::Block) as u32,
        new,
        seq_ids,
        positions,
        block_table,
        cache,
        p.rows,
        p.cols,
        layout.block_size as u32,
        layout.num_blocks as u32,
        layout.seqs as u32,
        layout.blocks_per_seq as u32,
    )?;
    Ok(())
}

/// Checks the layout and the buffers' lengths (`new`, `seq_ids`, `positions`, `block_table`,
/// `cache`) and plans the rows for a kernel whose threads hold `held` chunks; `None` when
/// there are no tokens.
fn plan(
    storage: FloatType,
    [new, seq_ids, positions, block_table, cache]: [usize; 5],
    tokens: usize,
    layout: PagedLayout,
    held: fn(FloatType, Access) -> u32,
) -> Result<Option<RowProblem>, Error> {
    const OP: &str = "kv_cache_append";
    let cache_rows = layout
        .num_blocks
        .checked_mul(layout.block_size)
        .ok_or_else(|| Error::Unsupported {
            op: OP,
            detail: "num_blocks × block_size overflows".into(),
        })?;
    if layout.block_size == 0 {
        return Err(Error::Unsupported {
            op: OP,
            detail: "block_size is 0; a block holds at least one token".into(),
        });
    }
    RowProblem::holding(OP, storage, cache_rows, layout.width, None, row_held_chunks)?
        .check_matrix(OP, "cache", cache)?;
    let p = RowProblem::holding(OP, storage, tokens, layout.width, None, held)?;
    p.check_matrix(OP, "new", new)?;
    p.check_per_row(OP, "seq_ids", seq_ids)?;
    p.check_per_row(OP, "positions", positions)?;
    let (seqs, per_seq) = (layout.seqs, layout.blocks_per_seq);
    check_len(OP, "block_table", block_table, seqs * per_seq, || {
        format!("seqs × blocks_per_seq = {seqs} × {per_seq}")
    })?;
    Ok((tokens > 0).then_some(p))
}
