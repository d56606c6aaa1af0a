//! The decode GEMV `y = x·Wᵀ` for up to 16 rows of int8 activations on the integer tensor
//! cores (sm_80+), over Q8_0, Q4_K or Q6_K weights. A block of eight warps takes 16 weight
//! rows, the `A` operand of `mma.m16n8k32` (rows `g` and `g + 8` of lane `(g, t)`), each warp
//! every eighth block of 256 weights, loading its next block's words while it works on the
//! current one. A group of 32 weights is one product per 8 rows of `x` (their `n`; a second
//! product only when `m > 8`; Q6_K, whose scales cover runs of 16, a product a run): the
//! codes go in as stored (Q4_K's nibbles spread to bytes, Q6_K's less 32 as int8), the
//! activations as [`QuantizedActivations`](super::QuantizedActivations) hold them, and the
//! exact `i32` sums meet the scales in f32: `a·d·Σ q·u − b·d·Σ u` for a weight `a·q − b` and
//! activations `d·u`. The warps' sums go through shared memory in warp order: reruns give the
//! same bits.

use kernel_macros::kernel;

/// Threads per block: eight warps over the same 16 weight rows.
pub(crate) const GEMV_Q8_MMA_THREADS: u32 = 256;
/// Words of a warp's stage of staged activations for one product: `x_stage_words()` in the
/// kernel is this times `NX` (8 rows of 64 words, then 8 rows of 20).
pub(crate) const GEMV_Q8_MMA_X_STAGE_WORDS: u32 = 8 * 64 + 8 * 20;

/// `w`: `n` weight rows of `row_bytes` bytes of format `F` (0 Q8_0, 1 Q4_K, 2 Q6_K; `k` a
/// multiple of 256); `xq`: rows of `k / 4` words of int8 and `xs` rows of `k / 32` pairs
/// `(d, d·Σu)`, of which the first `m` are read; `y`: `m × n`; `1 ≤ m ≤ 8·NX`. With `SX = 1`
/// each warp copies its next block's activations into shared memory by `cp.async` (two
/// stages of [`x_stage_words`] words a warp, dynamic), so that a group's operand is one
/// conflict-free shared load rather than a global load over 8 rows.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], F in [0, 1, 2], NX in [1, 2], SX in [0, 1]),
    block = 256,
    min_blocks = 2
)]
#[allow(clippy::too_many_arguments)]
pub fn gguf_gemv_q8_mma<T: Element, const F: u32, const NX: u32, const SX: u32>(
    w: &[u32],
    xq: &[u32],
    xs: &[f32],
    y: &mut [T],
    m: u32,
    n: u32,
    k: u32,
    row_bytes: u32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let lane = lane_id();
    let warp = thread_idx().x / 32;
    let g = lane / 4;
    let t = lane % 4;
    let bytes = block_bytes();
    let tile = block_idx().x * 16;
    let blocks = k / 256;
    // Byte offsets of the lane's weight rows `g` and `g + 8` (the last row past `n`).
    let mut base = [0u32; 2];
    for j in 0..2 {
        base[j] = min(tile + 8 * j + g, n - 1) * row_bytes;
    }
    // The rows of `x` the lane reads (the last one past `m`): row `8j + g` of product `j`'s
    // operand, and the scales of rows `8j + 2t` and `8j + 2t + 1`, its sums' columns.
    let mut x_at = [0u32; NX];
    let mut s_at = [0u32; 2 * NX];
    for j in 0..NX {
        x_at[j] = min(8 * j + g, m - 1) * (k / 4);
        for i in 0..2 {
            s_at[2 * j + i] = min(8 * j + 2 * t + i, m - 1) * (k / 32);
        }
    }
    let xbuf = dynamic_shared::<u32>();
    let xsbuf = dynamic_shared::<f32>();
    let stage_words = x_stage_words();
    let x_home = warp * 2 * stage_words;
    if SX == 1 {
        if warp < blocks {
            stage_x(xbuf, xsbuf, xq, xs, x_home, warp, m, k);
        }
        cp_async_commit();
    }
    let mut x_stage = 0u32;
    let mut raw = [0u32; 48];
    for j in 0..2 {
        let v = load_block(w, base[j] + bytes * min(warp, blocks - 1), t);
        for i in 0..24 {
            raw[24 * j + i] = v[i];
        }
    }
    // Element i of product j: weight row g + 8·(i / 2), row 8j + 2t + i % 2 of `x`.
    let mut acc = [0.0f32; 4 * NX];
    let mut c0 = warp;
    while c0 < blocks {
        let x_at_stage = x_home + x_stage * stage_words;
        if SX == 1 {
            // Every lane is done with the stage the next copies overwrite.
            sync_warp();
            if c0 + 8 < blocks {
                stage_x(
                    xbuf,
                    xsbuf,
                    xq,
                    xs,
                    x_home + (1 - x_stage) * stage_words,
                    c0 + 8,
                    m,
                    k,
                );
            }
            cp_async_commit();
            // This block's activations have landed, for every lane.
            cp_async_wait(1);
            sync_warp();
        }
        let mut words = [0u32; 36];
        let mut shared = [0u32; 12];
        for j in 0..2 {
            let mut v = [0u32; 24];
            for i in 0..24 {
                v[i] = raw[24 * j + i];
            }
            let a = align_block(v, base[j] + bytes * c0);
            let p = int8_block_scales(a);
            for i in 0..18 {
                words[18 * j + i] = a[i];
            }
            for i in 0..6 {
                shared[6 * j + i] = p[i];
            }
        }
        for s in 0..8 {
            if s == 4 {
                // The warp's next block (past the last, its last again: a cache hit), once
                // the first half's words are spent, so that both blocks' words never take
                // registers at once.
                for j in 0..2 {
                    let v = load_block(w, base[j] + bytes * min(c0 + 8, blocks - 1), t);
                    for i in 0..24 {
                        raw[24 * j + i] = v[i];
                    }
                }
            }
            // Group s's codes of rows g and g + 8, and their scales and offsets.
            let mut a = [0u32; 4];
            let mut ab = [0.0f32; 4];
            for j in 0..2 {
                let mut ws = [0u32; 18];
                for i in 0..18 {
                    ws[i] = words[18 * j + i];
                }
                let mut p = [0u32; 6];
                for i in 0..6 {
                    p[i] = shared[6 * j + i];
                }
                let q = int8_group_codes(ws, s);
                a[j] = q[0];
                a[2 + j] = q[1];
                let sc = int8_group_scales(ws, p, s);
                ab[2 * j] = sc[0];
                ab[2 * j + 1] = sc[1];
            }
            let group = 8 * c0 + s;
            for j in 0..NX {
                if j == 0 || m > 8 {
                    let mut u = [0u32; 2];
                    // `(d, d·Σu)` of the columns 2t and 2t + 1.
                    let mut ds = [0.0f32; 4];
                    if SX == 1 {
                        let r = 8 * j + g;
                        let v = xbuf.load_vec::<2>(x_at_stage + x_word_at(r, s) + 2 * t);
                        u[0] = v[0];
                        u[1] = v[1];
                        for i in 0..2 {
                            let at = x_at_stage + 512 * NX + 20 * (8 * j + 2 * t + i) + 2 * s;
                            let v = xsbuf.load_vec::<2>(at);
                            ds[2 * i] = v[0];
                            ds[2 * i + 1] = v[1];
                        }
                    } else {
                        let v = xq.load_vec::<2>(x_at[j] + 64 * c0 + 8 * s + 2 * t);
                        u[0] = v[0];
                        u[1] = v[1];
                        for i in 0..2 {
                            let v = xs.load_vec::<2>(2 * (s_at[2 * j + i] + group));
                            ds[2 * i] = v[0];
                            ds[2 * i + 1] = v[1];
                        }
                    }
                    if F == 2 {
                        // Q6_K: lanes 0–1 hold the group's first run of 16, lanes 2–3 the
                        // second, each with its own scale: one product a run, the other
                        // run's activations zeroed.
                        let first = t < 2;
                        let lo = [
                            if first { u[0] } else { 0u32 },
                            if first { u[1] } else { 0u32 },
                        ];
                        let hi = [
                            if first { 0u32 } else { u[0] },
                            if first { 0u32 } else { u[1] },
                        ];
                        let s0 = mma_m16n8k32_s8(a, lo, [0i32; 4]);
                        let s1 = mma_m16n8k32_s8(a, hi, [0i32; 4]);
                        for i in 0..4 {
                            let r = i / 2;
                            let e = 4 * j + i;
                            let runs = ab[2 * r] * (s0[i] as f32) + ab[2 * r + 1] * (s1[i] as f32);
                            let scaled = from_bits(shared[6 * r]) * ds[2 * (i % 2)];
                            acc[e] = fma(scaled, runs, acc[e]);
                        }
                    } else {
                        let sums = mma_m16n8k32_s8(a, [u[0], u[1]], [0i32; 4]);
                        for i in 0..4 {
                            let r = i / 2;
                            let c = i % 2;
                            let e = 4 * j + i;
                            let scaled = ab[2 * r] * ds[2 * c];
                            acc[e] = fma(scaled, sums[i] as f32, acc[e]);
                            if F == 1 {
                                acc[e] = fma(-ab[2 * r + 1], ds[2 * c + 1], acc[e]);
                            }
                        }
                    }
                }
            }
        }
        c0 += 8;
        x_stage = 1 - x_stage;
    }
    // Every weight is loaded: the next kernel's blocks may be placed while this block
    // reduces and stores.
    griddep_launch_dependents();
    // Element i of lane l of warp v at (i·8 + v)·32 + l: each store and load a row of banks.
    let part = shared_array::<f32, { 1024 * NX }>();
    for i in 0..4 * NX {
        part[(i * 8 + warp) * 32 + lane] = acc[i];
    }
    sync_threads();
    // Warp j < NX sums product j's four elements over the eight warps, in warp order.
    if warp < NX {
        let mut total = [0.0f32; 4];
        for i in 0..4 {
            let e = 4 * warp + i;
            total[i] = part[e * 256 + lane];
            for v in 1..8 {
                total[i] += part[(e * 8 + v) * 32 + lane];
            }
        }
        for i in 0..4 {
            let row = 8 * warp + 2 * t + i % 2;
            let col = tile + g + 8 * (i / 2);
            if row < m && col < n {
                y[row * n + col] = total[i] as T;
            }
        }
    }
}
