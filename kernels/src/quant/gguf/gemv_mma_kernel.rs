//! The decode GEMV `y = x·Wᵀ` for up to 16 rows of `x` on the tensor cores (sm_80+). The rows
//! of `x` are the `m` of `mma.m16n8k16` (rows past `m` read row `m − 1` and are never
//! stored); a warp takes `NT` tiles of 8 weight rows, the `n`, so each `A` operand it loads
//! feeds `NT` products (four tiles measured no faster than two, and spill with f32 `x`). The
//! eight warps of a block share the same `8·NT` rows and take every eighth Q4_K block of
//! them, a lane loading the words of its next block before decoding the current one. A lane
//! turns its codes into bf16 weights in registers (`fragment.rs`): the weight bytes are read
//! once and nothing is staged in shared memory. With at most 8 rows of `x` the upper half of
//! `A` repeats the lower instead of loading rows that are not there. The warps' f32
//! accumulators are summed through shared memory in warp order: reruns give the same bits.

use kernel_macros::kernel;

/// Threads per block: eight warps over the same weight rows.
pub(crate) const GEMV_MMA_THREADS: u32 = 256;

/// `w`: `n` rows of `row_bytes` bytes of format `F` (1: Q4_K); `x`: `m × k` elements of `T`
/// read as words (`k / 2` a row for bf16); `y`: `m × n`; `1 ≤ m ≤ 16`.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], F in [1], NT in [1, 2]),
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
    let mut base = [0u32; NT];
    for j in 0..NT {
        base[j] = min(tile + 8 * j + g, n - 1) * (row_bytes / 4);
    }
    let x0 = min(g, m - 1) * k;
    let x1 = min(g + 8, m - 1) * k;
    let blocks = k / 256;
    let mut acc = [0.0f32; 4 * NT];
    let mut c0 = warp;
    // The words of this warp's current block; those of its next block are loaded before the
    // current one is decoded, so a warp always has a block's loads in flight.
    let mut raw = [0u32; 12 * NT];
    for j in 0..NT {
        let v = load_q4k_block(w, base[j] + 36 * min(c0, blocks - 1), t);
        for i in 0..12 {
            raw[12 * j + i] = v[i];
        }
    }
    while c0 < blocks {
        let mut next = [0u32; 12 * NT];
        for j in 0..NT {
            let v = load_q4k_block(w, base[j] + 36 * min(c0 + 8, blocks - 1), t);
            for i in 0..12 {
                next[12 * j + i] = v[i];
            }
        }
        let xa0 = x_word(x0 + 256 * c0 + 8 * t);
        let xb0 = x_word(x1 + 256 * c0 + 8 * t);
        // Per tile: the eight sub-blocks' scale and min bytes, and the super-scales.
        let mut sm = [0u32; 4 * NT];
        let mut sp = [0u32; 4 * NT];
        for j in 0..NT {
            let at = 12 * j;
            let b = q4k_scale_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
            let p = q4k_super_pairs(raw[at]);
            for i in 0..4 {
                sm[4 * j + i] = b[i];
                sp[4 * j + i] = p[i];
            }
        }
        for q in 0..4 {
            for h in 0..2 {
                // Sub-block 2q + h: the low nibbles of group q's bytes, then the high. The
                // offset from the block's words is a constant of the unrolled loop.
                let xa = x_pairs(x, xa0 + x_word(64 * q + 32 * h));
                let mut xb = [0u32; 4];
                if m > 8 {
                    let v = x_pairs(x, xb0 + x_word(64 * q + 32 * h));
                    for i in 0..4 {
                        xb[i] = v[i];
                    }
                } else {
                    for i in 0..4 {
                        xb[i] = xa[i];
                    }
                }
                for j in 0..NT {
                    let at = 12 * j;
                    let sc = q4k_scale_pairs(
                        [sm[4 * j], sm[4 * j + 1], sm[4 * j + 2], sm[4 * j + 3]],
                        [sp[4 * j], sp[4 * j + 1], sp[4 * j + 2], sp[4 * j + 3]],
                        2 * q + h,
                    );
                    let q0 = (raw[at + 4 + 2 * q] >> (4 * h)) & 0x0f0f_0f0f;
                    let q1 = (raw[at + 5 + 2 * q] >> (4 * h)) & 0x0f0f_0f0f;
                    let prev = [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]];
                    let b0 = [
                        code_pair(q0, 0, sc[0], sc[1]),
                        code_pair(q0, 2, sc[0], sc[1]),
                    ];
                    let d0 = mma_m16n8k16_bf16([xa[0], xb[0], xa[1], xb[1]], b0, prev);
                    let b1 = [
                        code_pair(q1, 0, sc[0], sc[1]),
                        code_pair(q1, 2, sc[0], sc[1]),
                    ];
                    let d1 = mma_m16n8k16_bf16([xa[2], xb[2], xa[3], xb[3]], b1, d0);
                    for i in 0..4 {
                        acc[4 * j + i] = d1[i];
                    }
                }
            }
        }
        for i in 0..12 * NT {
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
