//! The decode GEMV `y = x·Wᵀ` for up to 16 rows of `x` on the tensor cores (sm_80+). The rows
//! of `x` are the `m` of `mma.m16n8k16` (rows past `m` read row `m − 1` and are never
//! stored); a warp takes `NT` tiles of 8 weight rows, the `n`, so each `A` operand it loads
//! feeds `NT` products. The eight warps of a block share the same `8·NT` rows and take every
//! eighth Q4_K block of them, each lane loading the words of `U` blocks before decoding the
//! first. A lane turns its codes into bf16 weights in registers (`fragment.rs`): the weight
//! bytes are read once and nothing is staged in shared memory. With at most 8 rows of `x`
//! the upper half of `A` repeats the lower instead of loading rows that are not there. The
//! warps' f32 accumulators are summed through shared memory in warp order: reruns give the
//! same bits.

use kernel_macros::kernel;

/// Threads per block: eight warps over the same weight rows.
pub(crate) const GEMV_MMA_THREADS: u32 = 256;

/// `w`: `n` rows of `row_bytes` bytes of format `F` (1: Q4_K); `x`: `m × k` elements of `T`
/// read as words (`k / 2` a row for bf16); `y`: `m × n`; `1 ≤ m ≤ 16`.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], F in [1], NT in [1, 2, 4], U in [if NT == 4 { 1 } else { 2 }]),
    block = 256,
    min_blocks = 2
)]
pub fn gguf_gemv_mma<T: Element, const F: u32, const NT: u32, const U: u32>(
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
    while c0 < blocks {
        // Every load of the U blocks first; past the row's end a lane reloads its last block
        // (in cache) and skips it below, so that no load is predicated.
        let mut raw = [0u32; 12 * NT * U];
        for u in 0..U {
            let c = min(c0 + 8 * u, blocks - 1);
            for j in 0..NT {
                let b = base[j] + 36 * c;
                let at = 12 * (NT * u + j);
                let hd = w.load_vec::<4>(b);
                for i in 0..4 {
                    raw[at + i] = hd[i];
                }
                for q in 0..4 {
                    let v = w.load_vec::<2>(b + 4 + 8 * q + 2 * t);
                    raw[at + 4 + 2 * q] = v[0];
                    raw[at + 5 + 2 * q] = v[1];
                }
            }
        }
        for u in 0..U {
            let c = c0 + 8 * u;
            if c < blocks {
                let mut dd = [0.0f32; 2 * NT];
                for j in 0..NT {
                    let h0 = raw[12 * (NT * u + j)];
                    dd[2 * j] = half_to_f32(h0 & 0xffff);
                    dd[2 * j + 1] = half_to_f32(h0 >> 16);
                }
                for q in 0..4 {
                    for h in 0..2 {
                        // Sub-block 2q + h: the low nibbles of group q's bytes, then the high.
                        let e = 256 * c + 64 * q + 32 * h + 8 * t;
                        let xa = x_pairs(x, x0 + e);
                        let mut xb = [0u32; 4];
                        if m > 8 {
                            let v = x_pairs(x, x1 + e);
                            for i in 0..4 {
                                xb[i] = v[i];
                            }
                        } else {
                            for i in 0..4 {
                                xb[i] = xa[i];
                            }
                        }
                        for j in 0..NT {
                            let at = 12 * (NT * u + j);
                            let hd = [raw[at], raw[at + 1], raw[at + 2], raw[at + 3]];
                            let sc = q4k_scale_pairs(hd, dd[2 * j], dd[2 * j + 1], 2 * q + h);
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
            }
        }
        c0 += 8 * U;
    }
    let part = shared_array::<f32, { 1024 * NT }>();
    for i in 0..4 * NT {
        part[(warp * 32 + lane) * 4 * NT + i] = acc[i];
    }
    sync_threads();
    // Warp j < NT sums tile j over the eight warps, in warp order.
    if warp < NT {
        for i in 0..4 {
            let mut total = part[lane * 4 * NT + 4 * warp + i];
            for v in 1..8 {
                total += part[(v * 32 + lane) * 4 * NT + 4 * warp + i];
            }
            let row = g + 8 * (i / 2);
            let col = tile + 8 * warp + 2 * t + i % 2;
            if row < m && col < n {
                y[row * n + col] = total as T;
            }
        }
    }
}
