//! The dQ kernel of the flash-attention backward (sm_80+, `mma.sync`).
//!
//! One block of `W` warps per (tile of `16·W` queries, query head, sequence); each warp owns
//! 16 queries. The block holds its Q and dO tile in shared memory and walks the key tiles (32
//! keys) in order, the next streaming in by `cp.async` while the current one is used: it
//! recomputes `S = Q·Kᵀ` and `dP = dO·Vᵀ`, forms `dS = P ∘ (dP − delta)` in registers (the
//! A operand's layout) and adds `dS·K` into f32 accumulators, written once, so dQ needs no
//! atomics and is the same run to run.
//!
//! Shared memory (words, rows `D / 2 + 4` apart): Q and dO (`16·W` rows each), then two stages
//! of K (32 rows) and V (32 rows).

#[allow(unused_imports)]
use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::kernel;

/// `dq` for the queries of tile `block_idx().x` (`16·W` queries; counted from the end when
/// causal) of sequence `block_idx().z`, query head `block_idx().y`. `lse`, `delta`:
/// `[heads_q, tokens]`; `scale_log2`: the softmax scale times log2 e; `causal`: 1 for the
/// causal mask.
#[kernel(crate = crate::lang, block = if W == 8 { 256 } else { 128 }, instances(
    <bf16, Bf16Pairs, 64, 8>, <bf16, Bf16Pairs, 128, 8>, <bf16, Bf16Pairs, 256, 4>,
    <f16, F16Pairs, 64, 8>, <f16, F16Pairs, 128, 8>, <f16, F16Pairs, 256, 4>,
))]
pub fn flash_backward_dq<T: Element, M: PairMma, const D: u32, const W: u32>(
    q: &[T],
    k: &[T],
    v: &[T],
    d_o: &[T],
    lse: &[f32],
    delta: &[f32],
    cu_seqlens: &[u32],
    dq: &mut [T],
    tokens: u32,
    heads_q: u32,
    heads_kv: u32,
    scale: f32,
    scale_log2: f32,
    causal: u32,
) {
    let seq = block_idx().z;
    // Offsets live on the device, unchecked: a sequence is clipped to the packed tokens
    // (an end before its start makes it empty), so no access leaves the buffers.
    let end = min(cu_seqlens[seq + 1], tokens);
    let start = min(cu_seqlens[seq], end);
    let len = end - start;
    // Causal tiles late in a sequence see the most keys: launch them first, so that the
    // light ones fill the tail.
    let mut tile = block_idx().x;
    if causal == 1 {
        tile = grid_dim().x - 1 - block_idx().x;
    }
    let q0 = tile * 16 * W;
    if q0 < len {
        let words = dynamic_shared::<u32>();
        let tid = thread_idx().x;
        let lane = lane_id();
        let warp = tid >> 5;
        let g = lane >> 2;
        let t4 = lane & 3;
        let i = lane >> 3;
        let r = lane & 7;
        let pitch = D / 2 + 4;
        let h = block_idx().y;
        let kvh = h / (heads_q / heads_kv);

        let q_ld = heads_q * D;
        let q_first = (start + q0) * q_ld + h * D;
        load_heads(words, 0, q, q_first, q_ld, 16 * W, len - q0, tid);
        load_heads(
            words,
            16 * W * pitch,
            d_o,
            q_first,
            q_ld,
            16 * W,
            len - q0,
            tid,
        );

        // Key tiles wholly after the last query see none of this tile's queries when causal.
        let k_tiles = (len + 31) / 32;
        let mut total = k_tiles;
        if causal == 1 {
            total = min(k_tiles, (q0 + 16 * W) / 32);
        }
        let kv_ld = heads_kv * D;
        let kv_head = kvh * D;
        let stages = 32 * W * pitch;
        load_heads(
            words,
            stages,
            k,
            start * kv_ld + kv_head,
            kv_ld,
            32,
            len,
            tid,
        );
        load_heads(
            words,
            stages + 32 * pitch,
            v,
            start * kv_ld + kv_head,
            kv_ld,
            32,
            len,
            tid,
        );
        cp_async_commit();

        let a_lane = (warp * 16 + (lane & 15)) * pitch + (lane >> 4) * 4;
        let b_lane = (((i >> 1) << 3) + r) * pitch + (i & 1) * 4;
        let bt_lane = (((i & 1) << 3) + r) * pitch + (i >> 1) * 4;

        // This lane's rows: queries q0 + 16·warp + g (+8).
        let row_lo = q0 + warp * 16 + g;
        let mut lse2 = [0.0f32; 2];
        let mut dl = [0.0f32; 2];
        for half in 0..2 {
            let row = row_lo + 8 * half;
            let at = h * tokens + start + row;
            let l = lse.load_vec_or::<1>(at, row < len, 0.0f32);
            let d = delta.load_vec_or::<1>(at, row < len, 0.0f32);
            lse2[half] = l[0] * 1.442_695_f32;
            dl[half] = d[0];
        }

        let mut acc = [0.0f32; D / 2];
        for t in 0..total {
            cp_async_wait(0);
            sync_threads();
            let next = t + 1;
            if next < total {
                let first = (start + next * 32) * kv_ld + kv_head;
                let dst = stages + (next & 1) * 64 * pitch;
                load_heads(words, dst, k, first, kv_ld, 32, len - next * 32, tid);
                load_heads(
                    words,
                    dst + 32 * pitch,
                    v,
                    first,
                    kv_ld,
                    32,
                    len - next * 32,
                    tid,
                );
            }
            cp_async_commit();
            let k0 = t * 32;
            let stage = stages + (t & 1) * 64 * pitch;

            let s = rows_by_rows(words, a_lane, stage + b_lane);
            let dp = rows_by_rows(words, 16 * W * pitch + a_lane, stage + 32 * pitch + b_lane);
            let mut ds = [0.0f32; 16];
            for j in 0..4 {
                for half in 0..2 {
                    for e in 0..2 {
                        let at = j * 4 + half * 2 + e;
                        let row = row_lo + 8 * half;
                        let key = k0 + 8 * j + 2 * t4 + e;
                        let mut pv = ex2_approx_ftz(s[at] * scale_log2 - lse2[half]);
                        if key >= len || (causal == 1 && key > row) {
                            pv = 0.0f32;
                        }
                        ds[at] = pv * (dp[at] - dl[half]);
                    }
                }
            }
            // dQ += dS·K over the 32 keys, two k steps of 16.
            for ks in 0..2 {
                let sa = operand_of(ds, ks);
                for nj in 0..D / 16 {
                    let bk = ldmatrix_x4_trans(words, stage + bt_lane + ks * 16 * pitch + nj * 8);
                    for half in 0..2 {
                        let at = (nj * 2 + half) * 4;
                        let n = M::mma(
                            sa,
                            [bk[half * 2], bk[half * 2 + 1]],
                            [acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
                        );
                        for x in 0..4 {
                            acc[at + x] = n[x];
                        }
                    }
                }
            }
        }
        cp_async_wait(0);

        for half in 0..2 {
            let row = row_lo + 8 * half;
            if row < len {
                let out = (start + row) * q_ld + h * D + 2 * t4;
                for n in 0..D / 8 {
                    let at = n * 4 + half * 2;
                    dq.store_vec::<2>(
                        out + 8 * n,
                        [(acc[at] * scale) as T, (acc[at + 1] * scale) as T],
                    );
                }
            }
        }
    }
}
