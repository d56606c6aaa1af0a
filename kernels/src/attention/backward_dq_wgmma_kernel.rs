//! The flash-attention backward's dQ for Hopper in `#[kernel]` (sm_90a): one block per 128
//! query rows of one head of one sequence, looping over the keys in tiles of 64.
//!
//! The forward's layout, with `dQ += dS·K` in place of `O += P·V`. Warpgroup 0 is the
//! producer: one thread copies Q and dO once, then each tile's K and V into stage `j % 2` of a
//! two-stage ring of 128-byte swizzled boxes. Warpgroups 1 and 2 take 64 query rows each: per
//! tile, `S = Q·Kᵀ` and `dP = dO·Vᵀ` by `wgmma` from shared memory, `P = exp(S·scale − lse)`
//! and `dS = P ∘ (dP − delta)` on the accumulator registers (a row's values lie in the four
//! lanes of a quad, and `lse` and `delta` are per row, so each thread holds its two rows'),
//! then `dQ += dS·K` with `dS` rounded to `T` as the register A operand and K read MN-major.
//! Nothing is summed across blocks, so dQ is the same on every run.
//!
//! Shared memory, in elements from the first 1024-byte boundary: Q and dO (128 rows × `D`
//! each, as `D / 64` boxes), then per stage K and V (64 rows × `D` each).

use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::kernel;

/// Query rows per block: two consumer warpgroups of 64.
pub const BLOCK_ROWS: u32 = 128;
/// Keys per tile.
pub const KEY_TILE: u32 = 64;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;

/// Dynamic shared memory for head dim `dim`: 1 KiB of slack to align the tiles, Q and dO, and
/// two stages of K and V.
pub const fn shared_bytes(dim: u32) -> u32 {
    1024 + (2 * BLOCK_ROWS + 4 * KEY_TILE) * dim * 2
}

/// `dq = scale · dS·K` for the 128 query rows of tile `grid_dim().x - 1 - block_idx().x` of
/// query head `block_idx().y` of sequence `block_idx().z`, where `dS = P ∘ (dP − delta)`,
/// `P = exp(scale · q·kᵀ − lse)` and `dP = d_o·vᵀ` (layouts as the module
/// [`crate::attention`] documents; `group` query heads share a kv head; `lse` and `delta` are
/// indexed `head · tokens + token`). `q`, `d_o` are tensor maps over `[tokens, heads_q, D]`
/// in boxes of 64 elements × 1 head × 128 tokens, `k` and `v` over `[tokens, heads_kv, D]` in
/// boxes of 64 × 1 × 64, all 128-byte swizzled. `scale_log2` is `scale · log2 e`, and
/// positive. Blocks past the sequence's length exit at once. Dynamic shared memory:
/// [`shared_bytes`].
#[kernel(crate = crate::lang, block = 384, needs = sm_90a, maxnreg = 168, instances(
    <bf16, Bf16Pairs, 0, 64, 0>, <bf16, Bf16Pairs, 0, 64, 1>,
    <bf16, Bf16Pairs, 0, 128, 0>, <bf16, Bf16Pairs, 0, 128, 1>,
    <f16, F16Pairs, 1, 64, 0>, <f16, F16Pairs, 1, 64, 1>,
    <f16, F16Pairs, 1, 128, 0>, <f16, F16Pairs, 1, 128, 1>,
))]
pub fn flash_backward_dq_wgmma<
    T: Element,
    M: PairMma,
    const HALF: u32,
    const D: u32,
    const C: u32,
>(
    q: &TensorMap<T, 3>,
    k: &TensorMap<T, 3>,
    v: &TensorMap<T, 3>,
    d_o: &TensorMap<T, 3>,
    lse: &[f32],
    delta: &[f32],
    cu_seqlens: &[u32],
    dq: &mut [T],
    tokens: u32,
    heads_q: u32,
    group: u32,
    scale: f32,
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
    let smem = dynamic_shared::<T, { 512 + (256 + 256) * D }>();
    let qd_full = shared_array::<u64, 1>();
    let k_full = shared_array::<u64, 2>();
    let v_full = shared_array::<u64, 2>();
    let k_empty = shared_array::<u64, 2>();
    let v_empty = shared_array::<u64, 2>();
    // Consumer c may issue a tile's first products once `turn[c]` completes: the consumers
    // take turns.
    let turn = shared_array::<u64, 2>();
    // The 128-byte swizzle repeats every 1024 bytes: every box starts on that boundary.
    let q_at = align_index(smem, 1024);
    let do_at = q_at + 128 * D;
    let kv_at = do_at + 128 * D;
    let t = thread_idx().x;
    // Keys this block's rows attend: up to the diagonal of its last row when causal.
    let mut keys = len;
    if C == 1 {
        keys = min(len, q0 + 128);
    }
    let n_tiles = (keys + 63) / 64;
    if t == 0 {
        mbarrier_init(qd_full, 0, 1);
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
            mbarrier_arrive_expect_tx(qd_full, 0, 2 * 128 * D * 2);
            for b in 0..D / 64 {
                let at = b * 128 * 64;
                tma_load(smem, q_at + at, q, [b * 64, h, start + q0], qd_full, 0);
                tma_load(smem, do_at + at, d_o, [b * 64, h, start + q0], qd_full, 0);
            }
            let mut j = 0u32;
            while j < n_tiles {
                let stage = j % 2;
                // From the third tile on, the stage's previous K and V must be released:
                // that is their empty barriers' phase j / 2 − 1.
                let parity = (j / 2 + 1) % 2;
                let kt = kv_at + stage * 2 * 64 * D;
                let row = start + j * 64;
                if j >= 2 {
                    while !mbarrier_try_wait_parity(k_empty, stage, parity) {}
                }
                mbarrier_arrive_expect_tx(k_full, stage, 64 * D * 2);
                for b in 0..D / 64 {
                    tma_load(smem, kt + b * 64 * 64, k, [b * 64, hk, row], k_full, stage);
                }
                if j >= 2 {
                    while !mbarrier_try_wait_parity(v_empty, stage, parity) {}
                }
                mbarrier_arrive_expect_tx(v_full, stage, 64 * D * 2);
                for b in 0..D / 64 {
                    let dst = kt + 64 * D + b * 64 * 64;
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
        let me = wg - 1;
        // This warpgroup's 64 rows: its half of every Q and dO box.
        let first_row = q0 + (wg - 1) * 64;
        let qa = q_at + (wg - 1) * 64 * 64;
        let da = do_at + (wg - 1) * 64 * 64;
        let row_lo = first_row + 16 * warp + g;
        let row_hi = row_lo + 8;
        // Each thread's two rows' log-sum-exp (base 2) and delta; rows past the sequence are
        // never stored, so theirs may be anything finite.
        let mut lse0 = 0.0f32;
        let mut lse1 = 0.0f32;
        let mut delta0 = 0.0f32;
        let mut delta1 = 0.0f32;
        if row_lo < len {
            lse0 = lse[h * tokens + start + row_lo] * 1.442695;
            delta0 = delta[h * tokens + start + row_lo];
        }
        if row_hi < len {
            lse1 = lse[h * tokens + start + row_hi] * 1.442695;
            delta1 = delta[h * tokens + start + row_hi];
        }
        // acc[4·i ..]: dQ's columns 8·i .. 8·i + 8, rows g (0, 1) and g + 8 (2, 3).
        let mut acc = [0.0f32; D / 2];
        let mut s = [0.0f32; 32];
        let mut dp = [0.0f32; 32];
        let mut dsf = [0u32; 16];
        while !mbarrier_try_wait_parity(qd_full, 0, 0) {}
        let mut j = 0u32;
        while j < n_tiles {
            let stage = j % 2;
            let phase = (j / 2) % 2;
            let kt = kv_at + stage * 2 * 64 * D;
            let vt = kt + 64 * D;
            // The consumers issue `S` and `dP` in turn, the first one first, so one's
            // softmax runs while the other's products are on the tensor cores: consumer 0
            // waits for consumer 1's previous turn, consumer 1 for consumer 0's current one.
            if me == 1 || j > 0 {
                while !mbarrier_try_wait_parity(turn, me, (j + me + 1) % 2) {}
            }
            wgmma_fence();
            while !mbarrier_try_wait_parity(k_full, stage, phase) {}
            for ks in 0..D / 16 {
                // Box ks / 4 of the head dim, 32 bytes along its rows a step.
                let box_at = (ks / 4) * 128 * 64 + (ks % 4) * 16;
                let dqa = wgmma_desc(smem, qa + box_at, 16, 1024, 128);
                let db = wgmma_desc(smem, kt + (ks / 4) * 64 * 64 + (ks % 4) * 16, 16, 1024, 128);
                if HALF == 1 {
                    wgmma_f16(&mut s, dqa, db, ks > 0, false, false);
                } else {
                    wgmma_bf16(&mut s, dqa, db, ks > 0, false, false);
                }
            }
            wgmma_commit_group();
            while !mbarrier_try_wait_parity(v_full, stage, phase) {}
            for ks in 0..D / 16 {
                let box_at = (ks / 4) * 128 * 64 + (ks % 4) * 16;
                let dda = wgmma_desc(smem, da + box_at, 16, 1024, 128);
                let db = wgmma_desc(smem, vt + (ks / 4) * 64 * 64 + (ks % 4) * 16, 16, 1024, 128);
                if HALF == 1 {
                    wgmma_f16(&mut dp, dda, db, ks > 0, false, false);
                } else {
                    wgmma_bf16(&mut dp, dda, db, ks > 0, false, false);
                }
            }
            wgmma_commit_group();
            if lead {
                mbarrier_arrive(turn, 1 - me);
            }
            wgmma_wait_group(1);
            // P, with the keys past the sequence and, when causal, past the row masked out.
            let key0 = j * 64;
            for i in 0..8 {
                for x in 0..4 {
                    let key = key0 + i * 8 + 2 * p + (x & 1);
                    let row = row_lo + 8 * (x >> 1);
                    let l = if x < 2 { lse0 } else { lse1 };
                    let e = ex2_approx_ftz(fma(s[i * 4 + x], scale_log2, -l));
                    let keep = if C == 1 {
                        key < len && key <= row
                    } else {
                        key < len
                    };
                    s[i * 4 + x] = if keep { e } else { 0.0 };
                }
            }
            wgmma_wait_group(0);
            // dP has retired: the stage's V goes back to the producer.
            if lead {
                mbarrier_arrive(v_empty, stage);
            }
            // dS = P ∘ (dP − delta), rounded into the A operand of k step kk (keys
            // 16·kk .. 16·kk + 16).
            for i in 0..8 {
                dp[i * 4] = s[i * 4] * (dp[i * 4] - delta0);
                dp[i * 4 + 1] = s[i * 4 + 1] * (dp[i * 4 + 1] - delta0);
                dp[i * 4 + 2] = s[i * 4 + 2] * (dp[i * 4 + 2] - delta1);
                dp[i * 4 + 3] = s[i * 4 + 3] * (dp[i * 4 + 3] - delta1);
            }
            for kk in 0..4 {
                let lo = kk * 8;
                let hi = lo + 4;
                dsf[kk * 4] = M::pack(dp[lo + 1], dp[lo]);
                dsf[kk * 4 + 1] = M::pack(dp[lo + 3], dp[lo + 2]);
                dsf[kk * 4 + 2] = M::pack(dp[hi + 1], dp[hi]);
                dsf[kk * 4 + 3] = M::pack(dp[hi + 3], dp[hi + 2]);
            }
            wgmma_fence();
            for kk in 0..4 {
                let a = [
                    dsf[kk * 4],
                    dsf[kk * 4 + 1],
                    dsf[kk * 4 + 2],
                    dsf[kk * 4 + 3],
                ];
                // 16 keys are 16 rows of 128 bytes; the head dim's boxes are 64 rows apart.
                let db = wgmma_desc(smem, kt + kk * 1024, 64 * 128, 1024, 128);
                if HALF == 1 {
                    wgmma_f16_regs(&mut acc, a, db, true, true);
                } else {
                    wgmma_bf16_regs(&mut acc, a, db, true, true);
                }
            }
            wgmma_commit_group();
            wgmma_wait_group(0);
            if lead {
                mbarrier_arrive(k_empty, stage);
            }
            j += 1;
        }

        let q_stride = heads_q * D;
        if row_lo < len {
            let at = (start + row_lo) * q_stride + h * D + 2 * p;
            for i in 0..D / 8 {
                dq.store_vec::<2>(
                    at + i * 8,
                    [(acc[i * 4] * scale) as T, (acc[i * 4 + 1] * scale) as T],
                );
            }
        }
        if row_hi < len {
            let at = (start + row_hi) * q_stride + h * D + 2 * p;
            for i in 0..D / 8 {
                dq.store_vec::<2>(
                    at + i * 8,
                    [(acc[i * 4 + 2] * scale) as T, (acc[i * 4 + 3] * scale) as T],
                );
            }
        }
    }
}
