//! CPU references for the layout ops (exact: they only move elements).

use super::PagedLayout;

/// `y[b][a] = x[a][b]` for an `[A, B, D]` tensor.
///
/// ```
/// assert_eq!(kernels::layout::reference::swap_outer(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3, 1),
///            vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// ```
pub fn swap_outer(x: &[f32], a: usize, b: usize, d: usize) -> Vec<f32> {
    let mut y = vec![0.0; a * b * d];
    for i in 0..a {
        for j in 0..b {
            let src = (i * b + j) * d;
            let dst = (j * a + i) * d;
            y[dst..dst + d].copy_from_slice(&x[src..src + d]);
        }
    }
    y
}

/// The cache after appending `new` (same skipping rules as the kernel).
///
/// ```
/// use kernels::layout::{reference, PagedLayout};
/// let layout = PagedLayout { num_blocks: 1, block_size: 2, width: 1, seqs: 1, blocks_per_seq: 1 };
/// let cache = reference::kv_cache_append(&[0.0, 0.0], &[5.0, 6.0], &[0, 0], &[1, 2], &[0], layout);
/// assert_eq!(cache, vec![0.0, 5.0]); // position 2 is past the table and skipped
/// ```
pub fn kv_cache_append(
    cache: &[f32],
    new: &[f32],
    seq_ids: &[u32],
    positions: &[u32],
    block_table: &[u32],
    layout: PagedLayout,
) -> Vec<f32> {
    let mut out = cache.to_vec();
    let w = layout.width;
    for (t, (&s, &p)) in seq_ids.iter().zip(positions).enumerate() {
        let (s, p) = (s as usize, p as usize);
        let logical = p / layout.block_size;
        if s >= layout.seqs || logical >= layout.blocks_per_seq {
            continue;
        }
        let block = block_table[s * layout.blocks_per_seq + logical] as usize;
        if block >= layout.num_blocks {
            continue;
        }
        let dst = (block * layout.block_size + p % layout.block_size) * w;
        out[dst..dst + w].copy_from_slice(&new[t * w..(t + 1) * w]);
    }
    out
}
