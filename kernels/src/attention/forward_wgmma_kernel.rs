//! The flash-attention forward for Hopper in `#[kernel]` (sm_90a): the copy engine brings Q,
//! K and V into 128-byte swizzled tiles and `wgmma` multiplies them, one block per 128 query
//! rows of one head of one sequence.
//!
//! Three warpgroups, warp-specialized. Warpgroup 0 is the producer: it gives up registers and
//! one thread copies Q once, then each tile of `N` keys' K and V into stage `j % 2` of a
//! two-stage ring, K and V completing on barriers of their own so `S = Q·Kᵀ` starts before V
//! has landed; a stage is refilled once both consumers have released it. Warpgroups 1 and 2 are
//! the consumers, 64 query rows each: per tile, `S = Q·Kᵀ` by `wgmma` from shared memory into
//! f32 registers, the online softmax in base 2 on those registers (the accumulator's layout
//! puts a row's values in the four lanes of a quad, as `mma.sync`'s does), then `O += P·V`
//! with `P` rounded to `T` straight from `S` as `wgmma`'s register A operand and V read
//! MN-major, so nothing is rearranged by threads and `P` never touches shared memory.
//!
//! The tensor cores are kept busy two ways, as FlashAttention-3 does. Within a consumer, tile
//! j's `S` is issued before tile j − 1's `P·V`, and tile j's softmax runs while both are
//! multiplied (K is released once `S` retires, V once `P·V` does, so each has a tile of slack).
//! Between the consumers, a pair of mbarriers makes them issue their products in turn, so one
//! consumer's softmax overlaps the other's products instead of both waiting on the same tile.
//!
//! Q and K are k-contiguous operands (the head dim is their k): a 64-wide box of the head dim
//! is one swizzled row, and a k16 step is 32 bytes along it. V is the MN-major B operand of
//! `P·V`: 16 keys (k) are 16 rows of 128 bytes, and the head dim's 64-wide boxes lie a whole
//! box apart. Boxes past the packed tokens are zero-filled by the copy engine; keys past the
//! sequence's end are masked, and query rows past it are never stored.
//!
//! Shared memory, in elements from the first 1024-byte boundary: Q (128 rows × `D`, as `D / 64`
//! boxes), then per stage K and V (`N` rows × `D` each, as boxes).

use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::kernel;

/// Query rows per block: two consumer warpgroups of 64.
pub const BLOCK_ROWS: u32 = 128;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;

/// Keys per tile for head dim `dim` and the mask: 128; 176 for head dim 128 unmasked (longer
/// products against the same softmax work, and two stages still fit); 64 for 256 so two
/// stages fit.
pub const fn key_tile(dim: u32, causal: bool) -> u32 {
    if dim == 256 {
        64
    } else if dim == 128 && !causal {
        176
    } else {
        128
    }
}

/// Dynamic shared memory for head dim `dim` and keys a tile `keys`: 1 KiB of slack to align
/// the tiles, Q, and two stages of K and V.
pub const fn shared_bytes(dim: u32, keys: u32) -> u32 {
    1024 + (BLOCK_ROWS + 4 * keys) * dim * 2
}

/// `o = softmax(scale · q·kᵀ)·v` and its row log-sum-exp for the 128 query rows of tile
/// `grid_dim().x - 1 - block_idx().x` of query head `block_idx().y` of sequence
/// `block_idx().z` (layouts as the module [`crate::attention`] documents; `group` query heads
/// share a kv head). `q`, `k` and `v` are tensor maps over `[tokens, heads, D]` in boxes of
/// 64 elements × 1 head × 128 (`q`) or `N` (`k`, `v`) tokens, 128-byte swizzled.
/// `scale_log2` is the softmax scale times `log2 e`, and positive. Blocks past the sequence's
/// length exit at once. Dynamic shared memory: [`shared_bytes`].
#[kernel(crate = crate::lang, block = 384, needs = sm_90a, instances(
    <bf16, Bf16Pairs, 0, 64, 128, 0>, <bf16, Bf16Pairs, 0, 64, 128, 1>,
    <bf16, Bf16Pairs, 0, 128, 176, 0>, <bf16, Bf16Pairs, 0, 128, 128, 1>,
    <bf16, Bf16Pairs, 0, 256, 64, 0>, <bf16, Bf16Pairs, 0, 256, 64, 1>,
    <f16, F16Pairs, 1, 64, 128, 0>, <f16, F16Pairs, 1, 64, 128, 1>,
    <f16, F16Pairs, 1, 128, 176, 0>, <f16, F16Pairs, 1, 128, 128, 1>,
    <f16, F16Pairs, 1, 256, 64, 0>, <f16, F16Pairs, 1, 256, 64, 1>,
))]
pub fn flash_forward_wgmma<
    T: Element,
    M: PairMma,
    const HALF: u32,
    const D: u32,
    const N: u32,
    const C: u32,
>(
    q: &TensorMap<T, 3>,
    k: &TensorMap<T, 3>,
    v: &TensorMap<T, 3>,
    cu_seqlens: &[u32],
    o: &mut [T],
    lse: &mut [f32],
    tokens: u32,
    heads_q: u32,
    group: u32,
    scale_log2: f32,
) {
    let seq = block_idx().z;
    let h = block_idx().y;
    // The last query tiles first: under a causal mask they have the most keys.
    let q0 = (grid_dim().x - 1 - block_idx().x) * 128;
    // Offsets past `tokens` are clamped, so a bad `cu_seqlens` reads and writes nothing
    // outside the buffers.
    let start = min(cu_seqlens[seq], tokens);
    let end = max(min(cu_seqlens[seq + 1], tokens), start);
    let len = end - start;
    if q0 >= len {
        return;
    }
    let smem = dynamic_shared::<T, { 512 + (128 + 4 * N) * D }>();
    let q_full = shared_array::<u64, 1>();
    let k_full = shared_array::<u64, 2>();
    let v_full = shared_array::<u64, 2>();
    let k_empty = shared_array::<u64, 2>();
    let v_empty = shared_array::<u64, 2>();
    // Consumer c may issue its products once `turn[c]` completes: the consumers take turns.
    let turn = shared_array::<u64, 2>();
    // The 128-byte swizzle repeats every 1024 bytes: every box starts on that boundary.
    let q_at = align_index(smem, 1024);
    let kv_at = q_at + 128 * D;
    let t = thread_idx().x;
    // Keys this block attends: up to the diagonal of its last row when causal.
    let mut keys = len;
    if C == 1 {
        keys = min(len, q0 + 128);
    }
    let n_tiles = (keys + N - 1) / N;
    if t == 0 {
        mbarrier_init(q_full, 0, 1);
        for s in 0..2 {
            mbarrier_init(k_full, s, 1);
            mbarrier_init(v_full, s, 1);
            // One arrival per consumer warpgroup.
            mbarrier_init(k_empty, s, 2);
            mbarrier_init(v_empty, s, 2);
            mbarrier_init(turn, s, 1);
        }
        fence_proxy_async();
    }
    sync_threads();
    let wg = warpgroup_idx();
    if wg == 0 {
        setmaxnreg_dec(40);
        if t == 0 {
            let hk = h / group;
            mbarrier_arrive_expect_tx(q_full, 0, 128 * D * 2);
            for b in 0..D / 64 {
                tma_load(
                    smem,
                    q_at + b * 128 * 64,
                    q,
                    [b * 64, h, start + q0],
                    q_full,
                    0,
                );
            }
            let mut j = 0u32;
            while j < n_tiles {
                let stage = j % 2;
                // From the third tile on, the stage's previous K and V must be released:
                // that is their empty barriers' phase j / 2 − 1.
                let parity = (j / 2 + 1) % 2;
                if j >= 2 {
                    while !mbarrier_try_wait_parity(k_empty, stage, parity) {}
                }
                let kt = kv_at + stage * 2 * N * D;
                let row = start + j * N;
                mbarrier_arrive_expect_tx(k_full, stage, N * D * 2);
                for b in 0..D / 64 {
                    tma_load(smem, kt + b * N * 64, k, [b * 64, hk, row], k_full, stage);
                }
                if j >= 2 {
                    while !mbarrier_try_wait_parity(v_empty, stage, parity) {}
                }
                mbarrier_arrive_expect_tx(v_full, stage, N * D * 2);
                for b in 0..D / 64 {
                    let dst = kt + N * D + b * N * 64;
                    tma_load(smem, dst, v, [b * 64, hk, row], v_full, stage);
                }
                j += 1;
            }
        }
    } else {
        setmaxnreg_inc(232);
        let warp = (t / 32) % 4;
        let g = (t % 32) / 4;
        let p = t % 4;
        let lead = t % 128 == 0;
        // This warpgroup's 64 rows: its half of every Q box.
        let first_row = q0 + (wg - 1) * 64;
        let qa = q_at + (wg - 1) * 64 * 64;
        let row_lo = first_row + 16 * warp + g;
        let row_hi = row_lo + 8;
        // acc[4·i ..]: output columns 8·i .. 8·i + 8, rows g (0, 1) and g + 8 (2, 3).
        let mut acc = [0.0f32; D / 2];
        // Running row maxima (base 2, scaled) and this thread's part of the row sums.
        let mut m0 = f32::NEG_INFINITY;
        let mut m1 = f32::NEG_INFINITY;
        let mut l0 = 0.0f32;
        let mut l1 = 0.0f32;
        while !mbarrier_try_wait_parity(q_full, 0, 0) {}
        // Iteration j issues tile j's `S`, then tile j − 1's `P·V`, and runs tile j's softmax
        // while the tensor cores work through both: FlashAttention-3's order within a
        // warpgroup. The last tile's `P·V` follows the loop. Everything but that `P·V` is
        // unconditional in the loop and both groups are committed each time (the first `P·V`
        // group empty), so ptxas can tell which group a wait retires and keeps the `wgmma`s
        // asynchronous.
        let mut pf = [0u32; N / 4];
        let mut s = [0.0f32; N / 2];
        let mut j = 0u32;
        // The consumers issue their products in turn, the first one first, and each runs its
        // softmax while the other's products are on the tensor cores (FlashAttention-3's
        // ping-pong): consumer 0 waits for consumer 1's previous turn, consumer 1 for
        // consumer 0's current one.
        let me = wg - 1;
        while j < n_tiles {
            let stage = j % 2;
            if me == 1 || j > 0 {
                while !mbarrier_try_wait_parity(turn, me, (j + me + 1) % 2) {}
            }
            // `s`, `pf` and `acc` were written by threads since the last `wgmma`s.
            wgmma_fence();
            while !mbarrier_try_wait_parity(k_full, stage, (j / 2) % 2) {}
            let kt = kv_at + stage * 2 * N * D;
            for ks in 0..D / 16 {
                // Box ks / 4 of the head dim, 32 bytes along its rows a step; the first
                // step overwrites what `s` held.
                let da = wgmma_desc(
                    smem,
                    qa + (ks / 4) * 128 * 64 + (ks % 4) * 16,
                    16,
                    1024,
                    128,
                );
                let db = wgmma_desc(smem, kt + (ks / 4) * N * 64 + (ks % 4) * 16, 16, 1024, 128);
                if HALF == 1 {
                    wgmma_f16(&mut s, da, db, ks > 0, false, false);
                } else {
                    wgmma_bf16(&mut s, da, db, ks > 0, false, false);
                }
            }
            wgmma_commit_group();
            if j > 0 {
                let prev = 1 - stage;
                while !mbarrier_try_wait_parity(v_full, prev, ((j - 1) / 2) % 2) {}
                let vt = kv_at + prev * 2 * N * D + N * D;
                for kk in 0..N / 16 {
                    let a = [pf[kk * 4], pf[kk * 4 + 1], pf[kk * 4 + 2], pf[kk * 4 + 3]];
                    // 16 keys are 16 rows of 128 bytes; the head dim's boxes are N rows apart.
                    let db = wgmma_desc(smem, vt + kk * 1024, N * 128, 1024, 128);
                    if HALF == 1 {
                        wgmma_f16_regs(&mut acc, a, db, true, true);
                    } else {
                        wgmma_bf16_regs(&mut acc, a, db, true, true);
                    }
                }
            }
            wgmma_commit_group();
            if lead {
                mbarrier_arrive(turn, 1 - me);
            }
            wgmma_wait_group(1);
            // `S` has retired: the stage's K goes back to the producer.
            if lead {
                mbarrier_arrive(k_empty, stage);
            }
            let key0 = j * N;
            if key0 + N > len || (C == 1 && key0 + N > first_row + 1) {
                for i in 0..N / 8 {
                    for x in 0..4 {
                        let key = key0 + i * 8 + 2 * p + (x & 1);
                        let row = row_lo + 8 * (x >> 1);
                        if C == 1 {
                            s[i * 4 + x] = if key < len && key <= row {
                                s[i * 4 + x]
                            } else {
                                f32::NEG_INFINITY
                            };
                        } else {
                            s[i * 4 + x] = if key < len {
                                s[i * 4 + x]
                            } else {
                                f32::NEG_INFINITY
                            };
                        }
                    }
                }
            }

            // Online softmax on the unscaled scores: the scale is positive, so the largest
            // score is the largest scaled one, and each exponent is one fused multiply-add.
            // Key 0 is in every row's first tile, so the maxima are finite from then on and a
            // fully masked row of a later tile only contributes zeros.
            let mut e0 = f32::NEG_INFINITY;
            let mut e1 = f32::NEG_INFINITY;
            for i in 0..N / 8 {
                e0 = max(e0, max(s[i * 4], s[i * 4 + 1]));
                e1 = max(e1, max(s[i * 4 + 2], s[i * 4 + 3]));
            }
            for d in [1, 2] {
                e0 = max(e0, shfl_xor(e0, d));
                e1 = max(e1, shfl_xor(e1, d));
            }
            let n0 = max(m0, e0 * scale_log2);
            let n1 = max(m1, e1 * scale_log2);
            let c0 = ex2_approx_ftz(m0 - n0);
            let c1 = ex2_approx_ftz(m1 - n1);
            m0 = n0;
            m1 = n1;
            let mut sum0 = 0.0f32;
            let mut sum1 = 0.0f32;
            for i in 0..N / 8 {
                s[i * 4] = ex2_approx_ftz(fma(s[i * 4], scale_log2, -n0));
                s[i * 4 + 1] = ex2_approx_ftz(fma(s[i * 4 + 1], scale_log2, -n0));
                s[i * 4 + 2] = ex2_approx_ftz(fma(s[i * 4 + 2], scale_log2, -n1));
                s[i * 4 + 3] = ex2_approx_ftz(fma(s[i * 4 + 3], scale_log2, -n1));
                sum0 = sum0 + s[i * 4] + s[i * 4 + 1];
                sum1 = sum1 + s[i * 4 + 2] + s[i * 4 + 3];
            }
            l0 = l0 * c0 + sum0;
            l1 = l1 * c1 + sum1;

            // The previous tile's `P·V` has retired: its V goes back, and `O` may be
            // rescaled and `P` rewritten.
            wgmma_wait_group(0);
            if j > 0 && lead {
                mbarrier_arrive(v_empty, 1 - stage);
            }
            for i in 0..D / 8 {
                acc[i * 4] = acc[i * 4] * c0;
                acc[i * 4 + 1] = acc[i * 4 + 1] * c0;
                acc[i * 4 + 2] = acc[i * 4 + 2] * c1;
                acc[i * 4 + 3] = acc[i * 4 + 3] * c1;
            }
            // P's 16 keys of step kk are S's columns 16·kk .. 16·kk + 16.
            for kk in 0..N / 16 {
                let lo = kk * 8;
                let hi = lo + 4;
                pf[kk * 4] = M::pack(s[lo + 1], s[lo]);
                pf[kk * 4 + 1] = M::pack(s[lo + 3], s[lo + 2]);
                pf[kk * 4 + 2] = M::pack(s[hi + 1], s[hi]);
                pf[kk * 4 + 3] = M::pack(s[hi + 3], s[hi + 2]);
            }
            j += 1;
        }
        wgmma_fence();
        {
            let prev = (n_tiles - 1) % 2;
            while !mbarrier_try_wait_parity(v_full, prev, ((n_tiles - 1) / 2) % 2) {}
            let vt = kv_at + prev * 2 * N * D + N * D;
            for kk in 0..N / 16 {
                let a = [pf[kk * 4], pf[kk * 4 + 1], pf[kk * 4 + 2], pf[kk * 4 + 3]];
                // 16 keys are 16 rows of 128 bytes; the head dim's boxes are N rows apart.
                let db = wgmma_desc(smem, vt + kk * 1024, N * 128, 1024, 128);
                if HALF == 1 {
                    wgmma_f16_regs(&mut acc, a, db, true, true);
                } else {
                    wgmma_bf16_regs(&mut acc, a, db, true, true);
                }
            }
        }
        wgmma_commit_group();
        wgmma_wait_group(0);

        // The four lanes of a quad hold a row's sums between them.
        for d in [1, 2] {
            l0 = l0 + shfl_xor(l0, d);
            l1 = l1 + shfl_xor(l1, d);
        }
        let inv0 = 1.0 / l0;
        let inv1 = 1.0 / l1;
        let q_stride = heads_q * D;
        if row_lo < len {
            let at = (start + row_lo) * q_stride + h * D + 2 * p;
            for i in 0..D / 8 {
                o.store_vec::<2>(
                    at + i * 8,
                    [(acc[i * 4] * inv0) as T, (acc[i * 4 + 1] * inv0) as T],
                );
            }
            if p == 0 {
                lse[h * tokens + start + row_lo] = (m0 + log2(l0)) * 0.6931472;
            }
        }
        if row_hi < len {
            let at = (start + row_hi) * q_stride + h * D + 2 * p;
            for i in 0..D / 8 {
                o.store_vec::<2>(
                    at + i * 8,
                    [(acc[i * 4 + 2] * inv1) as T, (acc[i * 4 + 3] * inv1) as T],
                );
            }
            if p == 0 {
                lse[h * tokens + start + row_hi] = (m1 + log2(l1)) * 0.6931472;
            }
        }
    }
}
