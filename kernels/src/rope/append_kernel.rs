//! RoPE on a decode step's new queries and keys, fused with the paged-cache append: one launch
//! instead of a rotation each for q and k, three casts to the cache's type and two appends.
//!
//! One thread takes one pair of elements of one head of one token: the heads of q, then those
//! of k, then those of v. Pairs of the rotary part rotate (as [`rotate_kernel`](super::rotate_kernel)
//! does, with the same helper, so the values are those of `rope` followed by a cast); the other
//! pairs and v's pass through. q goes to `q_out`; k and v go to the slot of the token's
//! sequence and position, through the block table, and a token whose sequence, table entry or
//! block lies outside the layout appends nothing.

use kernel_macros::kernel;

/// `q: tokens × heads_q × head_dim`, `k, v: tokens × heads_kv × head_dim` (`head_dim` even);
/// `q_out` like `q`; the caches `num_blocks × block_size × (heads_kv · head_dim)`;
/// `block_table: seqs × blocks_per_seq`. `half` = rotary_dim / 2.
#[kernel(
    crate = crate::lang,
    instances(S in [f32, bf16], T in [f32, bf16, f16], INTERLEAVED in [0, 1]),
    block = 128
)]
pub fn rope_append<S: Element, T: Element, const INTERLEAVED: u32>(
    q: &[S],
    k: &[S],
    v: &[S],
    positions: &[u32],
    seq_ids: &[u32],
    block_table: &[u32],
    q_out: &mut [T],
    k_cache: &mut [T],
    v_cache: &mut [T],
    tokens: u32,
    heads_q: u32,
    heads_kv: u32,
    head_dim: u32,
    half: u32,
    exponent: f32,
    block_size: u32,
    num_blocks: u32,
    seqs: u32,
    blocks_per_seq: u32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let pairs = head_dim / 2;
    let per_token = (heads_q + 2 * heads_kv) * pairs;
    let items = tokens * per_token;
    let stride = block_dim().x * grid_dim().x;
    let mut item = block_idx().x * block_dim().x + thread_idx().x;
    while item < items {
        let token = item / per_token;
        let rest = item - token * per_token;
        let row = rest / pairs;
        let j = rest - row * pairs;
        let in_q = row < heads_q;
        let in_k = !in_q && row < heads_q + heads_kv;
        let rotated = (in_q || in_k) && j < half;
        // The pair's elements: NeoX rotates (j, j + half); interleaved pairs and everything
        // that passes through are (2j, 2j + 1).
        let mut e0 = 2 * j;
        let mut e1 = 2 * j + 1;
        if INTERLEAVED == 0 && rotated {
            e0 = j;
            e1 = j + half;
        }
        // The head's first element in its own tensor.
        let mut head = token * heads_q + row;
        if !in_q {
            let kv_row = if in_k {
                row - heads_q
            } else {
                row - heads_q - heads_kv
            };
            head = token * heads_kv + kv_row;
        }
        let at = head * head_dim;
        let mut x0 = 0.0f32;
        let mut x1 = 0.0f32;
        if in_q {
            x0 = q[at + e0] as f32;
            x1 = q[at + e1] as f32;
        } else if in_k {
            x0 = k[at + e0] as f32;
            x1 = k[at + e1] as f32;
        } else {
            x0 = v[at + e0] as f32;
            x1 = v[at + e1] as f32;
        }
        let pos = positions[token];
        let mut y0 = x0;
        let mut y1 = x1;
        if rotated {
            let r = rotation(pos as f32, j, exponent, 1.0);
            y0 = x0.mul_add(r[0], -(x1 * r[1]));
            y1 = x1.mul_add(r[0], x0 * r[1]);
        }
        if in_q {
            q_out[at + e0] = y0 as T;
            q_out[at + e1] = y1 as T;
        } else {
            let seq = seq_ids[token];
            let logical = pos / block_size;
            let listed = seq < seqs && logical < blocks_per_seq;
            let entry = block_table.load_vec_or::<1>(seq * blocks_per_seq + logical, listed, 0u32);
            let block = entry[0];
            if listed && block < num_blocks {
                let slot = block * block_size + (pos - logical * block_size);
                let dst = (slot * heads_kv + (head - token * heads_kv)) * head_dim;
                if in_k {
                    k_cache[dst + e0] = y0 as T;
                    k_cache[dst + e1] = y1 as T;
                } else {
                    v_cache[dst + e0] = y0 as T;
                    v_cache[dst + e1] = y1 as T;
                }
            }
        }
        item += stride;
    }
}
