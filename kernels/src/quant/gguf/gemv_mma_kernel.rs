//! The decode GEMV `y = x·Wᵀ` for up to 16 rows of `x` on the tensor cores (sm_80+), over
//! Q8_0, Q4_K or Q6_K weights. The rows of `x` are the `m` of `mma.m16n8k16` (rows past `m` read
//! row `m − 1` and are never stored); a warp takes `NT` tiles of 8 weight rows, the `n`, so
//! each `A` operand it loads feeds `NT` products (four tiles measured no faster than two,
//! and spill with f32 `x`). The eight warps of a block share the same `8·NT` rows and take
//! every eighth block of 256 weights of them, a lane loading the words of its next block
//! before decoding the current one. A lane
//! turns its codes into bf16 weights in registers (`fragment.rs`): the weight bytes are read
//! once and nothing is staged in shared memory. With at most 8 rows of `x` the upper half of
//! `A` repeats the lower instead of loading rows that are not there. The warps' f32
//! accumulators are summed through shared memory in warp order: reruns give the same bits.

use kernel_macros::kernel;

/// Threads per block: eight warps over the same weight rows.
pub(crate) const GEMV_MMA_THREADS: u32 = 256;

/// `w`: `n` rows of `row_bytes` bytes of format `F` (0 Q8_0, 1 Q4_K, 2 Q6_K; `k` a multiple
/// of 256); `x`: `m × k` elements of `T` read as words (`k / 2` a row for bf16); `y`:
/// `m × n`; `1 ≤ m ≤ 16`. Q8_0, and Q6_K with f32 `x`, take one tile: with two, their 22
/// and 23 words a block in flight for each tile spill.
#[kernel(
    crate = crate::lang,
    instances(
        <f32, 0, 1>,
        <bf16, 0, 1>,
        <f32, 1, 1>,
        <f32, 1, 2>,
        <f32, 2, 1>,
        <bf16, 1, 1>,
        <bf16, 1, 2>,
        <bf16, 2, 1>,
        <bf16, 2, 2>
    ),
    block = 256,
    min_blocks = 2
)]
pub fn gguf_gemv_mma<T: Element, const F: u32, const NT: u32>(
    w: &[u32],
    x: &[u32],
    y: &mut [T],
    m: u32,
    n: u32,
    k: u32,
    row_bytes: u32,
) {
    let lane = lane_id();
    let warp = thread_idx().x / 32;
    let g = lane / 4;
    let t = lane % 4;
    let tile = block_idx().x * 8 * NT;
    let bytes = block_bytes();
    // Byte offsets of the lane's weight rows, one a tile.
    let mut base = [0u32; NT];
    for j in 0..NT {
        base[j] = min(tile + 8 * j + g, n - 1) * row_bytes;
    }
    let x0 = min(g, m - 1) * k;
    let x1 = min(g + 8, m - 1) * k;
    let blocks = k / 256;
    let mut acc = [0.0f32; 4 * NT];
    let mut c0 = warp;
    // The words of this warp's current block; those of its next block are loaded before the
    // current one is decoded, so a warp always has a block's loads in flight.
    let mut raw = [0u32; 24 * NT];
    for j in 0..NT {
        let v = load_block(w, base[j] + bytes * min(c0, blocks - 1), t);
        for i in 0..24 {
            raw[24 * j + i] = v[i];
        }
    }
    while c0 < blocks {
        let mut next = [0u32; 24 * NT];
        for j in 0..NT {
            let v = load_block(w, base[j] + bytes * min(c0 + 8, blocks - 1), t);
            for i in 0..24 {
                next[24 * j + i] = v[i];
            }
        }
        let xa0 = x_word(x0 + 256 * c0 + 8 * t);
        let xb0 = x_word(x1 + 256 * c0 + 8 * t);
        // Per tile: the block's words in a fixed layout, and what its groups share.
        let mut words = [0u32; 18 * NT];
        let mut shared = [0u32; 8 * NT];
        for j in 0..NT {
            let mut v = [0u32; 24];
            for i in 0..24 {
                v[i] = raw[24 * j + i];
            }
            let a = align_block(v, base[j] + bytes * c0);
            let p = block_scales(a, t);
            for i in 0..18 {
                words[18 * j + i] = a[i];
            }
            for i in 0..8 {
                shared[8 * j + i] = p[i];
            }
        }
        for s in 0..8 {
            // Group s: weights 32s..32s + 32 of the block. The offset from the block's words
            // is a constant of the unrolled loop.
            let xa = x_pairs(x, xa0 + x_word(32 * s));
            let mut xb = [0u32; 4];
            if m > 8 {
                let v = x_pairs(x, xb0 + x_word(32 * s));
                for i in 0..4 {
                    xb[i] = v[i];
                }
            } else {
                for i in 0..4 {
                    xb[i] = xa[i];
                }
            }
            for j in 0..NT {
                let mut a = [0u32; 18];
                for i in 0..18 {
                    a[i] = words[18 * j + i];
                }
                let mut p = [0u32; 8];
                for i in 0..8 {
                    p[i] = shared[8 * j + i];
                }
                let b = group_operand(a, s, group_scales(p, s));
                let prev = [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]];
                let d0 = mma_m16n8k16_bf16([xa[0], xb[0], xa[1], xb[1]], [b[0], b[1]], prev);
                let d1 = mma_m16n8k16_bf16([xa[2], xb[2], xa[3], xb[3]], [b[2], b[3]], d0);
                for i in 0..4 {
                    acc[4 * j + i] = d1[i];
                }
            }
        }
        for i in 0..24 * NT {
            raw[i] = next[i];
        }
        c0 += 8;
    }
    // Element i of lane l of warp v at (i·8 + v)·32 + l: each store and load a row of banks.
    let part = shared_array::<f32, { 1024 * NT }>();
    for i in 0..4 * NT {
        part[(i * 8 + warp) * 32 + lane] = acc[i];
    }
    sync_threads();
    // Warp j < NT sums tile j over the eight warps, in warp order.
    if warp < NT {
        for i in 0..4 {
            let e = 4 * warp + i;
            let mut total = part[e * 256 + lane];
            for v in 1..8 {
                total += part[(e * 8 + v) * 32 + lane];
            }
            let row = g + 8 * (i / 2);
            let col = tile + 8 * warp + 2 * t + i % 2;
            if row < m && col < n {
                y[row * n + col] = total as T;
            }
        }
    }
}
