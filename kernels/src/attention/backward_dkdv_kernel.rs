//! The dK/dV kernel of the flash-attention backward (sm_80+, `mma.sync`).
//!
//! One block of `W` warps per (tile of `16·W` keys, kv head and slice of the head dimension,
//! sequence). The block holds its K and V tile in shared memory and walks the query tiles
//! (32 queries) of every query head of its group in a fixed order, so the sums are the same
//! run to run with no atomics. Each warp owns 16 keys: it recomputes `Sᵀ = K·Qᵀ` and
//! `dPᵀ = V·dOᵀ` for them, turns them into `Pᵀ` and `dSᵀ` in registers, and adds `Pᵀ·dO`
//! and `dSᵀ·Q` over its slice of the head (`DS` columns) into f32 accumulators, written once
//! at the end. Working with the transposes keeps `Pᵀ` and `dSᵀ` in the accumulator layout,
//! which is the A operand's layout of the next product.
//!
//! Shared memory (words, rows `D / 2 + 4` apart): K and V (`16·W` rows each), then two stages
//! of Q (32 rows) and dO (32 rows), the next query tile streaming in by `cp.async` while the
//! current one is used.

#[allow(unused_imports)]
use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::kernel;

/// `dk`, `dv` for the keys of tile `block_idx().x` (`16·W` keys) of sequence `block_idx().z`, kv head
/// `block_idx().y / (D / DS)`, head columns `DS · (block_idx().y % (D / DS))..`. `lse`,
/// `delta`: `[heads_q, tokens]`; `scale_log2`: the softmax scale times log2 e; `causal`: 1
/// for the causal mask.
#[kernel(crate = crate::lang, block = if W == 8 { 256 } else { 128 }, instances(
    <bf16, Bf16Pairs, 64, 64, 8>, <bf16, Bf16Pairs, 128, 128, 8>, <bf16, Bf16Pairs, 256, 128, 4>,
    <f16, F16Pairs, 64, 64, 8>, <f16, F16Pairs, 128, 128, 8>, <f16, F16Pairs, 256, 128, 4>,
))]
pub fn flash_backward_dkdv<T: Element, M: PairMma, const D: u32, const DS: u32, const W: u32>(
    q: &[T],
    k: &[T],
    v: &[T],
    d_o: &[T],
    lse: &[f32],
    delta: &[f32],
    cu_seqlens: &[u32],
    dk: &mut [T],
    dv: &mut [T],
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
    let key0 = block_idx().x * 16 * W;
    if key0 < len {
        let words = dynamic_shared::<u32>();
        let tid = thread_idx().x;
        let lane = lane_id();
        let warp = tid >> 5;
        let g = lane >> 2;
        let t4 = lane & 3;
        let i = lane >> 3;
        let r = lane & 7;
        let pitch = D / 2 + 4;
        let kvh = block_idx().y / (D / DS);
        let col0 = (block_idx().y % (D / DS)) * DS;
        let group = heads_q / heads_kv;

        let kv_ld = heads_kv * D;
        let kv_first = (start + key0) * kv_ld + kvh * D;
        load_heads(words, 0, k, kv_first, kv_ld, 16 * W, len - key0, tid);
        load_heads(
            words,
            16 * W * pitch,
            v,
            kv_first,
            kv_ld,
            16 * W,
            len - key0,
            tid,
        );

        // Query tiles wholly before the first key see none of this tile's keys when causal.
        let q_tiles = (len + 31) / 32;
        let first_tile = if causal == 1 { key0 / 32 } else { 0 };
        let per_head = q_tiles - first_tile;
        let total = group * per_head;
        let q_ld = heads_q * D;
        let head0 = kvh * group;
        let stages = 32 * W * pitch;
        let q_first = (start + first_tile * 32) * q_ld + head0 * D;
        let q_valid = len - first_tile * 32;
        load_heads(words, stages, q, q_first, q_ld, 32, q_valid, tid);
        load_heads(
            words,
            stages + 32 * pitch,
            d_o,
            q_first,
            q_ld,
            32,
            q_valid,
            tid,
        );
        cp_async_commit();

        // ldmatrix row addresses: the warp's keys as A, a query tile's rows as B (both
        // k-contiguous), and a query tile's rows as B over the head columns (transposed).
        let a_lane = (warp * 16 + (lane & 15)) * pitch + (lane >> 4) * 4;
        let b_lane = (((i >> 1) << 3) + r) * pitch + (i & 1) * 4;
        let bt_lane = (((i & 1) << 3) + r) * pitch + (i >> 1) * 4 + col0 / 2;
        let key_lo = key0 + warp * 16 + g;

        let mut dk_acc = [0.0f32; DS / 2];
        let mut dv_acc = [0.0f32; DS / 2];
        for t in 0..total {
            // Tile t has landed for every thread, and every warp is done with tile t - 1,
            // whose stage the next tile refills.
            cp_async_wait(0);
            sync_threads();
            let next = t + 1;
            if next < total {
                let hn = head0 + next / per_head;
                let qn = first_tile + next % per_head;
                let first = (start + qn * 32) * q_ld + hn * D;
                let dst = stages + (next & 1) * 64 * pitch;
                load_heads(words, dst, q, first, q_ld, 32, len - qn * 32, tid);
                load_heads(
                    words,
                    dst + 32 * pitch,
                    d_o,
                    first,
                    q_ld,
                    32,
                    len - qn * 32,
                    tid,
                );
            }
            cp_async_commit();
            let h = head0 + t / per_head;
            let q0 = (first_tile + t % per_head) * 32;
            let stage = stages + (t & 1) * 64 * pitch;

            // This lane's columns: queries q0 + 8·j + 2·t4 + e. A query past the sequence
            // gets an infinite log-sum-exp, so its probabilities are zero.
            let mut lse2 = [0.0f32; 8];
            let mut dl = [0.0f32; 8];
            for j in 0..4 {
                for e in 0..2 {
                    let col = q0 + 8 * j + 2 * t4 + e;
                    let at = h * tokens + start + col;
                    let l = lse.load_vec_or::<1>(at, col < len, f32::INFINITY);
                    let d = delta.load_vec_or::<1>(at, col < len, 0.0f32);
                    lse2[j * 2 + e] = l[0] * 1.442_695_f32;
                    dl[j * 2 + e] = d[0];
                }
            }
            let s = rows_by_rows(words, a_lane, stage + b_lane);
            let dp = rows_by_rows(words, 16 * W * pitch + a_lane, stage + 32 * pitch + b_lane);
            let mut p = [0.0f32; 16];
            let mut ds = [0.0f32; 16];
            for j in 0..4 {
                for half in 0..2 {
                    for e in 0..2 {
                        let at = j * 4 + half * 2 + e;
                        let key = key_lo + 8 * half;
                        let col = q0 + 8 * j + 2 * t4 + e;
                        let mut pv = ex2_approx_ftz(s[at] * scale_log2 - lse2[j * 2 + e]);
                        if causal == 1 && key > col {
                            pv = 0.0f32;
                        }
                        p[at] = pv;
                        ds[at] = pv * (dp[at] - dl[j * 2 + e]);
                    }
                }
            }
            // dV += Pᵀ·dO and dK += dSᵀ·Q over the 32 queries, two k steps of 16.
            for ks in 0..2 {
                let pa = operand_of(p, ks);
                let sa = operand_of(ds, ks);
                for nj in 0..DS / 16 {
                    let at_b = stage + bt_lane + ks * 16 * pitch + nj * 8;
                    let bo = ldmatrix_x4_trans(words, at_b + 32 * pitch);
                    let bq = ldmatrix_x4_trans(words, at_b);
                    for half in 0..2 {
                        let at = (nj * 2 + half) * 4;
                        let nv = M::mma(
                            pa,
                            [bo[half * 2], bo[half * 2 + 1]],
                            [dv_acc[at], dv_acc[at + 1], dv_acc[at + 2], dv_acc[at + 3]],
                        );
                        let nk = M::mma(
                            sa,
                            [bq[half * 2], bq[half * 2 + 1]],
                            [dk_acc[at], dk_acc[at + 1], dk_acc[at + 2], dk_acc[at + 3]],
                        );
                        for x in 0..4 {
                            dv_acc[at + x] = nv[x];
                            dk_acc[at + x] = nk[x];
                        }
                    }
                }
            }
        }
        cp_async_wait(0);

        // Accumulator x of tile n: key g (+8 for x ≥ 2), column 8·n + 2·t4 (+1 for odd x).
        for half in 0..2 {
            let key = key_lo + 8 * half;
            if key < len {
                let row = (start + key) * kv_ld + kvh * D + col0 + 2 * t4;
                for n in 0..DS / 8 {
                    let at = n * 4 + half * 2;
                    dv.store_vec::<2>(row + 8 * n, [dv_acc[at] as T, dv_acc[at + 1] as T]);
                    dk.store_vec::<2>(
                        row + 8 * n,
                        [(dk_acc[at] * scale) as T, (dk_acc[at + 1] * scale) as T],
                    );
                }
            }
        }
    }
}
