//! Appending rows to a paged KV cache in `#[kernel]`.
//!
//! A token's row belongs to a warp (`CTA = 0`) or a block (`CTA = 1`). Each thread issues the
//! loads of [`held_chunks`] chunks of the row (64 bytes) before it looks the row's slot up, so
//! that the data is in flight while the dependent reads of the sequence id, the position and
//! the block-table entry come back; then it stores them, or skips the row where the sequence,
//! the table entry or the block falls outside the layout.

use kernel_macros::kernel;

/// Chunks of a row a thread holds: four 16-byte vectors, or 64 bytes of single elements (the
/// kernel's `4 * T::VEC / W`).
pub(crate) const fn held_chunks(vector: u32, width: u32) -> u32 {
    4 * vector / width
}

/// `new: tokens × width`, `seq_ids`, `positions`: one per token, `block_table: seqs ×
/// blocks_per_seq`, `cache: num_blocks × block_size × width`. The 16-byte instances are held
/// to 32 registers (ptxas takes 40 unbounded, without spilling at 32): a row's block is often
/// 64 threads, and at 32 registers an SM holds its 32 such blocks rather than 25.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16, f16], W in [1, T::VEC], CTA in [0, 1]),
    maxnreg = if W > 1 { 32 } else { 0 }
)]
pub fn kv_cache_append<T: Element, const W: u32, const CTA: u32>(
    new: &[T],
    seq_ids: &[u32],
    positions: &[u32],
    block_table: &[u32],
    cache: &mut [T],
    tokens: u32,
    width: u32,
    block_size: u32,
    num_blocks: u32,
    seqs: u32,
    blocks_per_seq: u32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = width / W;
    while row < tokens {
        let src = row * width;
        let last = src + width - 1;
        let mut c0 = lane;
        while c0 < chunks {
            let mut v = [0.0 as T; 4 * T::VEC];
            for h in 0..(4 * T::VEC / W) {
                let c = c0 + h * group;
                if W == 1 {
                    // One element: read a clamped index rather than predicate the load.
                    v[h] = new[min(src + c, last)];
                } else {
                    let u = new.load_vec_or::<W>(src + c * W, c < chunks, 0.0 as T);
                    for k in 0..W {
                        v[h * W + k] = u[k];
                    }
                }
            }
            let seq = seq_ids[row];
            let pos = positions[row];
            let logical = pos / block_size;
            let listed = seq < seqs && logical < blocks_per_seq;
            let entry = block_table.load_vec_or::<1>(seq * blocks_per_seq + logical, listed, 0u32);
            let block = entry[0];
            if listed && block < num_blocks {
                let dst = (block * block_size + (pos - logical * block_size)) * width;
                // Columns again rather than held beside the data: fewer registers.
                for h in 0..(4 * T::VEC / W) {
                    let c = c0 + h * group;
                    if c < chunks {
                        let mut u = [0.0 as T; W];
                        for k in 0..W {
                            u[k] = v[h * W + k];
                        }
                        cache.store_vec::<W>(dst + c * W, u);
                    }
                }
            }
            c0 += (4 * T::VEC / W) * group;
        }
        row += g[3];
    }
}
