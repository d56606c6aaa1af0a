//! The flash-attention backward's dK and dV for Hopper in `#[kernel]` (sm_90a): one block per
//! 128 keys of one kv head of one sequence, looping over the query tiles of 64 rows of every
//! query head that shares the kv head.
//!
//! The products are taken transposed, keys as rows, as FlashAttention-3 does: `Sᵀ = K·Qᵀ` and
//! `dPᵀ = V·dOᵀ` by `wgmma` from shared memory put a key's values in the four lanes of a quad,
//! so `Pᵀ` and `dSᵀ` rounded to `T` are already the register A operands of `dV += Pᵀ·dO` and
//! `dK += dSᵀ·Q`, with dO and Q read MN-major. Nothing is written to shared memory by threads
//! but each query tile's log-sum-exp and delta.
//!
//! Warpgroup 0 is the producer: one thread copies K and V once, then each query tile's Q and
//! dO into stage `i % 2` of a two-stage ring, and its second warp brings the tile's `lse`
//! (scaled to base 2) and `delta` beside them. Warpgroups 1 and 2 take 64 keys each. dK and dV
//! are summed in registers over every query head of the group, so nothing is summed across
//! blocks and the gradients are the same on every run.
//!
//! Shared memory, in elements from the first 1024-byte boundary: K and V (128 rows × `D` each,
//! as `D / 64` boxes), then per stage Q and dO (64 rows × `D` each).

use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::kernel;

/// Keys per block: two consumer warpgroups of 64.
pub const BLOCK_KEYS: u32 = 128;
/// Query rows per tile.
pub const QUERY_TILE: u32 = 64;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;

/// Dynamic shared memory for head dim `dim`: 1 KiB of slack to align the tiles, K and V, and
/// two stages of Q and dO.
pub const fn shared_bytes(dim: u32) -> u32 {
    1024 + (2 * BLOCK_KEYS + 4 * QUERY_TILE) * dim * 2
}

/// `dv = Σ Pᵀ·d_o` and `dk = scale · Σ dSᵀ·q` for keys `128 · block_idx().x ..` of kv head
/// `block_idx().y` of sequence `block_idx().z`, summed over the `group` query heads that
/// share it, where `P = exp(scale · q·kᵀ − lse)`, `dS = P ∘ (d_o·vᵀ − delta)` (layouts as the
/// module [`crate::attention`] documents; `lse` and `delta` are indexed
/// `head · tokens + token`). `k` and `v` are tensor maps over `[tokens, heads_kv, D]` in boxes
/// of 64 elements × 1 head × 128 tokens, `q` and `d_o` over `[tokens, heads_kv · group, D]` in
/// boxes of 64 × 1 × 64, all 128-byte swizzled. `scale_log2` is `scale · log2 e`, and
/// positive. Blocks past the sequence's length exit at once. Dynamic shared memory:
/// [`shared_bytes`].
#[kernel(crate = crate::lang, block = 384, needs = sm_90a, maxnreg = 168, instances(
    <bf16, Bf16Pairs, 0, 64, 0>, <bf16, Bf16Pairs, 0, 64, 1>,
    <bf16, Bf16Pairs, 0, 128, 0>, <bf16, Bf16Pairs, 0, 128, 1>,
    <f16, F16Pairs, 1, 64, 0>, <f16, F16Pairs, 1, 64, 1>,
    <f16, F16Pairs, 1, 128, 0>, <f16, F16Pairs, 1, 128, 1>,
))]
pub fn flash_backward_dkdv_wgmma<
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
    dk: &mut [T],
    dv: &mut [T],
    tokens: u32,
    heads_kv: u32,
    group: u32,
    scale: f32,
    scale_log2: f32,
) {
    let seq = block_idx().z;
    let hk = block_idx().y;
    let key0 = block_idx().x * 128;
    // Offsets past `tokens` are clamped, so a bad `cu_seqlens` reads and writes nothing
    // outside the buffers.
    let start = min(cu_seqlens[seq], tokens);
    let end = max(min(cu_seqlens[seq + 1], tokens), start);
    let len = end - start;
    if key0 >= len {
        return;
    }
    let smem = dynamic_shared::<T, { 512 + (256 + 256) * D }>();
    let kv_full = shared_array::<u64, 1>();
    let qd_full = shared_array::<u64, 2>();
    let qd_empty = shared_array::<u64, 2>();
    // Consumer c may issue a tile's first products once `turn[c]` completes: the consumers
    // take turns.
    let turn = shared_array::<u64, 2>();
    // Per stage, the query tile's log-sum-exp (base 2) and delta.
    let lse_s = shared_array::<f32, 128>();
    let delta_s = shared_array::<f32, 128>();
    // The 128-byte swizzle repeats every 1024 bytes: every box starts on that boundary.
    let k_at = align_index(smem, 1024);
    let v_at = k_at + 128 * D;
    let qd_at = v_at + 128 * D;
    let t = thread_idx().x;
    // Query tiles: from the one holding the block's first key when causal.
    let mut first = 0u32;
    if C == 1 {
        first = key0 / 64;
    }
    let per_head = (len + 63) / 64 - first;
    let n_iter = group * per_head;
    if t == 0 {
        mbarrier_init(kv_full, 0, 1);
        for s in 0..2 {
            // The copy engine's bytes, and one arrival from each lane of the warp that
            // brings `lse` and `delta`.
            mbarrier_init(qd_full, s, 33);
            // One arrival per consumer thread: each reads the stage's `lse` and `delta`
            // itself.
            mbarrier_init(qd_empty, s, 256);
            mbarrier_init(turn, s, 1);
        }
        fence_proxy_async();
    }
    sync_threads();
    let wg = warpgroup_idx();
    if wg == 0 {
        setmaxnreg_dec(24);
        let lane = t % 32;
        if t == 0 {
            mbarrier_arrive_expect_tx(kv_full, 0, 2 * 128 * D * 2);
            for b in 0..D / 64 {
                let at = b * 128 * 64;
                tma_load(smem, k_at + at, k, [b * 64, hk, start + key0], kv_full, 0);
                tma_load(smem, v_at + at, v, [b * 64, hk, start + key0], kv_full, 0);
            }
        }
        // Thread 0 issues the copies, the second warp brings `lse` and `delta`.
        if t == 0 || (t >= 32 && t < 64) {
            let mut it = 0u32;
            while it < n_iter {
                let stage = it % 2;
                let h = hk * group + it / per_head;
                let row0 = (first + it % per_head) * 64;
                // From the third tile on, the stage's previous tile must be released.
                if it >= 2 {
                    while !mbarrier_try_wait_parity(qd_empty, stage, (it / 2 + 1) % 2) {}
                }
                if t == 0 {
                    let qt = qd_at + stage * 2 * 64 * D;
                    mbarrier_arrive_expect_tx(qd_full, stage, 2 * 64 * D * 2);
                    for b in 0..D / 64 {
                        let at = b * 64 * 64;
                        let row = start + row0;
                        tma_load(smem, qt + at, q, [b * 64, h, row], qd_full, stage);
                        tma_load(
                            smem,
                            qt + 64 * D + at,
                            d_o,
                            [b * 64, h, row],
                            qd_full,
                            stage,
                        );
                    }
                } else {
                    for r in 0..2 {
                        let row = row0 + lane + 32 * r;
                        let mut l = 0.0f32;
                        let mut dl = 0.0f32;
                        if row < len {
                            l = lse[h * tokens + start + row] * 1.442695;
                            dl = delta[h * tokens + start + row];
                        }
                        lse_s[stage * 64 + lane + 32 * r] = l;
                        delta_s[stage * 64 + lane + 32 * r] = dl;
                    }
                    mbarrier_arrive(qd_full, stage);
                }
                it += 1;
            }
        }
    } else {
        setmaxnreg_inc(240);
        let warp = (t / 32) % 4;
        let g = (t % 32) / 4;
        let p = t % 4;
        let lead = t % 128 == 0;
        let w = wg - 1;
        // This warpgroup's 64 keys: its half of every K and V box.
        let ka = k_at + w * 64 * 64;
        let va = v_at + w * 64 * 64;
        let key_lo = key0 + w * 64 + 16 * warp + g;
        // acc[4·i ..]: columns 8·i .. 8·i + 8 of dK or dV, keys g (0, 1) and g + 8 (2, 3).
        let mut dv_acc = [0.0f32; D / 2];
        let mut dk_acc = [0.0f32; D / 2];
        let mut s = [0.0f32; 32];
        let mut dp = [0.0f32; 32];
        let mut pf = [0u32; 16];
        while !mbarrier_try_wait_parity(kv_full, 0, 0) {}
        let mut it = 0u32;
        while it < n_iter {
            let stage = it % 2;
            let row0 = (first + it % per_head) * 64;
            let qt = qd_at + stage * 2 * 64 * D;
            let dot = qt + 64 * D;
            while !mbarrier_try_wait_parity(qd_full, stage, (it / 2) % 2) {}
            // The consumers issue `Sᵀ` and `dPᵀ` in turn, the first one first, so one's
            // softmax runs while the other's products are on the tensor cores: consumer 0
            // waits for consumer 1's previous turn, consumer 1 for consumer 0's current one.
            if w == 1 || it > 0 {
                while !mbarrier_try_wait_parity(turn, w, (it + w + 1) % 2) {}
            }
            wgmma_fence();
            for ks in 0..D / 16 {
                // Box ks / 4 of the head dim, 32 bytes along its rows a step.
                let step = (ks % 4) * 16;
                let a = wgmma_desc(smem, ka + (ks / 4) * 128 * 64 + step, 16, 1024, 128);
                let b = wgmma_desc(smem, qt + (ks / 4) * 64 * 64 + step, 16, 1024, 128);
                if HALF == 1 {
                    wgmma_f16(&mut s, a, b, ks > 0, false, false);
                } else {
                    wgmma_bf16(&mut s, a, b, ks > 0, false, false);
                }
            }
            wgmma_commit_group();
            for ks in 0..D / 16 {
                let step = (ks % 4) * 16;
                let a = wgmma_desc(smem, va + (ks / 4) * 128 * 64 + step, 16, 1024, 128);
                let b = wgmma_desc(smem, dot + (ks / 4) * 64 * 64 + step, 16, 1024, 128);
                if HALF == 1 {
                    wgmma_f16(&mut dp, a, b, ks > 0, false, false);
                } else {
                    wgmma_bf16(&mut dp, a, b, ks > 0, false, false);
                }
            }
            wgmma_commit_group();
            if lead {
                mbarrier_arrive(turn, 1 - w);
            }
            wgmma_wait_group(1);
            // Pᵀ, with the queries past the sequence and, when causal, before the key masked
            // out.
            for i in 0..8 {
                for x in 0..4 {
                    let col = i * 8 + 2 * p + (x & 1);
                    let query = row0 + col;
                    let key = key_lo + 8 * (x >> 1);
                    let e = ex2_approx_ftz(fma(s[i * 4 + x], scale_log2, -lse_s[stage * 64 + col]));
                    let keep = if C == 1 {
                        query < len && key <= query
                    } else {
                        query < len
                    };
                    s[i * 4 + x] = if keep { e } else { 0.0 };
                }
            }
            // Pᵀ's 16 queries of step kk are its columns 16·kk .. 16·kk + 16.
            for kk in 0..4 {
                let lo = kk * 8;
                let hi = lo + 4;
                pf[kk * 4] = M::pack(s[lo + 1], s[lo]);
                pf[kk * 4 + 1] = M::pack(s[lo + 3], s[lo + 2]);
                pf[kk * 4 + 2] = M::pack(s[hi + 1], s[hi]);
                pf[kk * 4 + 3] = M::pack(s[hi + 3], s[hi + 2]);
            }
            wgmma_fence();
            for kk in 0..4 {
                let a = [pf[kk * 4], pf[kk * 4 + 1], pf[kk * 4 + 2], pf[kk * 4 + 3]];
                // 16 queries are 16 rows of 128 bytes; the head dim's boxes are 64 rows apart.
                let b = wgmma_desc(smem, dot + kk * 1024, 64 * 128, 1024, 128);
                if HALF == 1 {
                    wgmma_f16_regs(&mut dv_acc, a, b, true, true);
                } else {
                    wgmma_bf16_regs(&mut dv_acc, a, b, true, true);
                }
            }
            wgmma_commit_group();
            wgmma_wait_group(1);
            // dSᵀ = Pᵀ ∘ (dPᵀ − delta), per query column.
            for i in 0..8 {
                for x in 0..4 {
                    let col = i * 8 + 2 * p + (x & 1);
                    dp[i * 4 + x] = s[i * 4 + x] * (dp[i * 4 + x] - delta_s[stage * 64 + col]);
                }
            }
            // `P·dO` has retired: its operand registers take dSᵀ.
            wgmma_wait_group(0);
            for kk in 0..4 {
                let lo = kk * 8;
                let hi = lo + 4;
                pf[kk * 4] = M::pack(dp[lo + 1], dp[lo]);
                pf[kk * 4 + 1] = M::pack(dp[lo + 3], dp[lo + 2]);
                pf[kk * 4 + 2] = M::pack(dp[hi + 1], dp[hi]);
                pf[kk * 4 + 3] = M::pack(dp[hi + 3], dp[hi + 2]);
            }
            wgmma_fence();
            for kk in 0..4 {
                let a = [pf[kk * 4], pf[kk * 4 + 1], pf[kk * 4 + 2], pf[kk * 4 + 3]];
                let b = wgmma_desc(smem, qt + kk * 1024, 64 * 128, 1024, 128);
                if HALF == 1 {
                    wgmma_f16_regs(&mut dk_acc, a, b, true, true);
                } else {
                    wgmma_bf16_regs(&mut dk_acc, a, b, true, true);
                }
            }
            wgmma_commit_group();
            wgmma_wait_group(0);
            // The stage goes back to the producer once every thread is done with it.
            mbarrier_arrive(qd_empty, stage);
            it += 1;
        }

        let kv_stride = heads_kv * D;
        for x in 0..2 {
            let key = key_lo + 8 * x;
            if key < len {
                let at = (start + key) * kv_stride + hk * D + 2 * p;
                for i in 0..D / 8 {
                    let c = i * 4 + 2 * x;
                    dv.store_vec::<2>(at + i * 8, [dv_acc[c] as T, dv_acc[c + 1] as T]);
                    dk.store_vec::<2>(
                        at + i * 8,
                        [(dk_acc[c] * scale) as T, (dk_acc[c + 1] * scale) as T],
                    );
                }
            }
        }
    }
}
