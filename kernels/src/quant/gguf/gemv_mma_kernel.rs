//! The decode GEMV `y = x·Wᵀ` for 2 to 16 rows of `x` on the tensor cores (sm_80+): a block
//! of four warps takes 8 weight rows, the `n` of one `mma.m16n8k16`, and the 16 rows of `x`
//! its `m` (rows past `m` read row `m − 1` and are never stored). Each warp takes every
//! fourth Q4_K block of the rows, each lane loading the words of `U` blocks before decoding
//! the first; a lane turns its codes into bf16 weights in registers (`fragment.rs`), so the
//! weight bytes are read once and nothing is staged in shared memory. The four warps' f32
//! accumulators are summed through shared memory in warp order: reruns give the same bits.

use kernel_macros::kernel;

/// Threads per block: four warps over the same 8 weight rows.
pub(crate) const GEMV_MMA_THREADS: u32 = 128;
/// Weight rows per block.
pub(crate) const GEMV_MMA_ROWS: u32 = 8;

/// `w`: `n` rows of `row_bytes` bytes of format `F` (1: Q4_K); `x`: `m × k` elements of `T`
/// read as words (`k / 2` a row for bf16); `y`: `m × n`; `1 ≤ m ≤ 16`.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], F in [1], U in [2]),
    block = 128,
    min_blocks = 4
)]
pub fn gguf_gemv_mma<T: Element, const F: u32, const U: u32>(
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
    let tile = block_idx().x * 8;
    let base = min(tile + g, n - 1) * (row_bytes / 4);
    let x0 = min(g, m - 1) * k;
    let x1 = min(g + 8, m - 1) * k;
    let blocks = k / 256;
    let mut acc = [0.0f32; 4];
    let mut c0 = warp;
    while c0 < blocks {
        // Every load of the U blocks first; past the row's end a lane reloads its last block
        // (in cache) and skips it below, so that no load is predicated.
        let mut raw = [0u32; 12 * U];
        for u in 0..U {
            let b = base + 36 * min(c0 + 4 * u, blocks - 1);
            let hd = w.load_vec::<4>(b);
            for i in 0..4 {
                raw[12 * u + i] = hd[i];
            }
            for j in 0..4 {
                let q = w.load_vec::<2>(b + 4 + 8 * j + 2 * t);
                raw[12 * u + 4 + 2 * j] = q[0];
                raw[12 * u + 5 + 2 * j] = q[1];
            }
        }
        for u in 0..U {
            let c = c0 + 4 * u;
            if c < blocks {
                let hd = [raw[12 * u], raw[12 * u + 1], raw[12 * u + 2], raw[12 * u + 3]];
                let d = half_to_f32(hd[0] & 0xffff);
                let dmin = half_to_f32(hd[0] >> 16);
                for j in 0..4 {
                    let w0 = raw[12 * u + 4 + 2 * j];
                    let w1 = raw[12 * u + 5 + 2 * j];
                    for h in 0..2 {
                        // Sub-block 2j + h: the low nibbles of the group's bytes, then the high.
                        let q0 = (w0 >> (4 * h)) & 0x0f0f_0f0f;
                        let q1 = (w1 >> (4 * h)) & 0x0f0f_0f0f;
                        let sc = q4k_scale_pairs(hd, d, dmin, 2 * j + h);
                        let e = 256 * c + 64 * j + 32 * h + 8 * t;
                        let xa = x_pairs(x, x0 + e);
                        let xb = x_pairs(x, x1 + e);
                        let b0 = [
                            code_pair(q0, 0, sc[0], sc[1]),
                            code_pair(q0, 2, sc[0], sc[1]),
                        ];
                        let d0 = mma_m16n8k16_bf16([xa[0], xb[0], xa[1], xb[1]], b0, acc);
                        let b1 = [
                            code_pair(q1, 0, sc[0], sc[1]),
                            code_pair(q1, 2, sc[0], sc[1]),
                        ];
                        let d1 = mma_m16n8k16_bf16([xa[2], xb[2], xa[3], xb[3]], b1, d0);
                        for i in 0..4 {
                            acc[i] = d1[i];
                        }
                    }
                }
            }
        }
        c0 += 4 * U;
    }
    let part = shared_array::<f32, 512>();
    for i in 0..4 {
        part[(warp * 32 + lane) * 4 + i] = acc[i];
    }
    sync_threads();
    if warp == 0 {
        for i in 0..4 {
            let mut total = part[lane * 4 + i];
            for v in 1..4 {
                total += part[(v * 32 + lane) * 4 + i];
            }
            let row = g + 8 * (i / 2);
            let col = tile + 2 * t + i % 2;
            if row < m && col < n {
                y[row * n + col] = total as T;
            }
        }
    }
}
