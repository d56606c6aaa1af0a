//! The flash-attention forward in `#[kernel]` (sm_80+, `mma.sync`): FlashAttention-2's
//! schedule, one block per 64 query rows of one head of one sequence.
//!
//! Four warps, each owning 16 query rows. Q is staged once through shared memory; for head
//! dims up to 128 each warp keeps its Q fragments in registers, for 256 it reads them from
//! shared memory at every key tile (they would not fit beside the output accumulator). Tiles
//! of `N` keys and their values stream through a two-stage `cp.async` pipeline, zero-filled
//! past the sequence's end: the next tile is in flight while this one is multiplied, with one
//! barrier per tile. Per tile, `S = Q·Kᵀ` on the tensor cores, an online softmax in f32
//! registers in base 2 (`scale·log2 e` folded into one multiply), then `O += P·V` with `P`
//! rounded to `T` straight from the `S` accumulators, whose m16n8 layout is the m16n8k16 A
//! operand's. Causal blocks stop at the diagonal and mask only the tiles that cross it or the
//! sequence's end.
//!
//! Shared memory is in 32-bit words, rows of `D` elements padded by 16 bytes, so the eight
//! rows an `ldmatrix` reads start in eight different bank groups. Layout: stage 0 (K, V),
//! stage 1 (K, V), then Q for `D = 256`; for smaller heads Q is staged in stage 1's K, which
//! is free until Q has moved to registers.

use super::pair_mma::{Bf16Pairs, F16Pairs, PairMma};
use kernel_macros::{device, kernel};

/// Starts the loads of one tile of a head: rows `row0`, `row0 + step`, … (`passes` of them)
/// of this thread's 16-byte column chunk `col`, from `x` at element `first + row · stride`
/// into shared rows `pitch` words apart from word `dst`. Rows at or past `valid` are
/// zero-filled and read nothing.
#[device(crate = crate::lang)]
fn issue_rows<T>(
    words: &mut [u32],
    x: &[T],
    dst: u32,
    first: u32,
    stride: u32,
    valid: u32,
    passes: u32,
    step: u32,
    row0: u32,
    col: u32,
    pitch: u32,
) {
    for c in 0..passes {
        let r = row0 + c * step;
        cp_async_16_or(
            words,
            dst + r * pitch + col * 4,
            x,
            first + r * stride + col * 8,
            r < valid,
        );
    }
}

/// `o = softmax(scale · q·kᵀ)·v` and its row log-sum-exp for the 64 query rows of tile
/// `grid_dim().x - 1 - block_idx().x` of query head `block_idx().y` of sequence
/// `block_idx().z` (layouts as the module [`crate::attention`] documents; `group` query heads
/// share a kv head). `scale_log2` is the softmax scale times `log2 e`. Blocks past the sequence's length exit at once. Dynamic
/// shared memory: [`shared_bytes`](super::forward::shared_bytes).
#[kernel(crate = crate::lang, block = 128, instances(
    <bf16, Bf16Pairs, 64, 64, 0>, <bf16, Bf16Pairs, 64, 64, 1>,
    <bf16, Bf16Pairs, 128, 64, 0>, <bf16, Bf16Pairs, 128, 64, 1>,
    <bf16, Bf16Pairs, 256, 32, 0>, <bf16, Bf16Pairs, 256, 32, 1>,
    <f16, F16Pairs, 64, 64, 0>, <f16, F16Pairs, 64, 64, 1>,
    <f16, F16Pairs, 128, 64, 0>, <f16, F16Pairs, 128, 64, 1>,
    <f16, F16Pairs, 256, 32, 0>, <f16, F16Pairs, 256, 32, 1>,
))]
pub fn flash_forward<T: Element, M: PairMma, const D: u32, const N: u32, const C: u32>(
    q: &[T],
    k: &[T],
    v: &[T],
    cu_seqlens: &[u32],
    o: &mut [T],
    lse: &mut [f32],
    tokens: u32,
    heads_q: u32,
    heads_kv: u32,
    group: u32,
    scale_log2: f32,
) {
    let seq = block_idx().z;
    let h = block_idx().y;
    // The last query tiles first: under a causal mask they have the most keys, and starting
    // them early leaves the short ones to fill the device's tail.
    let q0 = (grid_dim().x - 1 - block_idx().x) * 64;
    // Offsets past `tokens` are clamped, so a bad `cu_seqlens` reads and writes nothing
    // outside the buffers.
    let start = min(cu_seqlens[seq], tokens);
    let end = max(min(cu_seqlens[seq + 1], tokens), start);
    let len = end - start;
    if q0 >= len {
        return;
    }
    let words = dynamic_shared::<u32>();
    let tid = thread_idx().x;
    let lane = lane_id();
    let warp = tid >> 5;
    let g = lane >> 2;
    let t4 = lane & 3;

    let pitch = D / 2 + 4;
    let tile = N * pitch;
    let q_at = if D == 256 { 4 * tile } else { 2 * tile };
    let q_stride = heads_q * D;
    let kv_stride = heads_kv * D;
    let kv_col = (h / group) * D;

    // Each thread moves one 16-byte column chunk of every `step`-th row of a tile.
    let chunks_per_row = D / 8;
    let col = tid % chunks_per_row;
    let row0 = tid / chunks_per_row;
    let step = 128 / chunks_per_row;

    // Keys this block attends: up to the diagonal of its last row when causal.
    let mut keys = len;
    if C == 1 {
        keys = min(len, q0 + 64);
    }
    let n_tiles = (keys + N - 1) / N;

    issue_rows(
        words,
        q,
        q_at,
        (start + q0) * q_stride + h * D,
        q_stride,
        len - q0,
        64 / step,
        step,
        row0,
        col,
        pitch,
    );
    cp_async_commit();
    issue_rows(
        words,
        k,
        0,
        start * kv_stride + kv_col,
        kv_stride,
        len,
        N / step,
        step,
        row0,
        col,
        pitch,
    );
    issue_rows(
        words,
        v,
        tile,
        start * kv_stride + kv_col,
        kv_stride,
        len,
        N / step,
        step,
        row0,
        col,
        pitch,
    );
    cp_async_commit();

    // Fragment addresses (words) of this lane's `ldmatrix` rows: Q as the A operand, K as
    // the B operand of `Q·Kᵀ`, V (transposed) as the B operand of `P·V`.
    let i = lane >> 3;
    let r = lane & 7;
    let q_lane = q_at + (warp * 16 + (lane & 15)) * pitch + (lane >> 4) * 4;
    let k_lane = ((i >> 1) * 8 + r) * pitch + (i & 1) * 4;
    let v_lane = ((i & 1) * 8 + r) * pitch + (i >> 1) * 4;

    let mut qf = [0u32; D / 4];
    if D != 256 {
        cp_async_wait(1);
        sync_threads();
        for ks in 0..D / 16 {
            let f = ldmatrix_x4(words, q_lane + ks * 8);
            for x in 0..4 {
                qf[ks * 4 + x] = f[x];
            }
        }
    }

    // acc[4·i ..]: output columns 8·i .. 8·i + 8, rows g (0, 1) and g + 8 (2, 3).
    let mut acc = [0.0f32; D / 2];
    // Running row maxima (base 2, scaled) and this thread's part of the row sums.
    let mut m0 = f32::NEG_INFINITY;
    let mut m1 = f32::NEG_INFINITY;
    let mut l0 = 0.0f32;
    let mut l1 = 0.0f32;
    let row_lo = q0 + warp * 16 + g;
    let row_hi = row_lo + 8;

    for j in 0..n_tiles {
        // Tile j has landed for every thread, and every warp is done with tile j - 1 (and
        // with Q's staging), whose stage the next tile fills.
        cp_async_wait(0);
        sync_threads();
        if j + 1 < n_tiles {
            let dst = ((j + 1) & 1) * 2 * tile;
            let first = (start + (j + 1) * N) * kv_stride + kv_col;
            let valid = len - (j + 1) * N;
            issue_rows(
                words,
                k,
                dst,
                first,
                kv_stride,
                valid,
                N / step,
                step,
                row0,
                col,
                pitch,
            );
            issue_rows(
                words,
                v,
                dst + tile,
                first,
                kv_stride,
                valid,
                N / step,
                step,
                row0,
                col,
                pitch,
            );
        }
        cp_async_commit();
        let kb = (j & 1) * 2 * tile;
        let vb = kb + tile;

        // s[4·t ..]: keys 8·t .. 8·t + 8 of the tile, laid out as acc.
        let mut s = [0.0f32; N / 2];
        for ks in 0..D / 16 {
            let mut a = [0u32; 4];
            if D == 256 {
                let f = ldmatrix_x4(words, q_lane + ks * 8);
                for x in 0..4 {
                    a[x] = f[x];
                }
            } else {
                for x in 0..4 {
                    a[x] = qf[ks * 4 + x];
                }
            }
            for nj in 0..N / 16 {
                let b = ldmatrix_x4(words, kb + k_lane + nj * 16 * pitch + ks * 8);
                for half in 0..2 {
                    let at = (nj * 2 + half) * 4;
                    let d = M::mma(
                        a,
                        [b[half * 2], b[half * 2 + 1]],
                        [s[at], s[at + 1], s[at + 2], s[at + 3]],
                    );
                    for x in 0..4 {
                        s[at + x] = d[x];
                    }
                }
            }
        }

        for x in 0..N / 2 {
            s[x] = s[x] * scale_log2;
        }
        let key0 = j * N;
        if key0 + N > len || (C == 1 && key0 + N > q0 + 1) {
            for t in 0..N / 8 {
                for x in 0..4 {
                    let key = key0 + t * 8 + 2 * t4 + (x & 1);
                    let row = row_lo + 8 * (x >> 1);
                    if C == 1 {
                        s[t * 4 + x] = if key < len && key <= row {
                            s[t * 4 + x]
                        } else {
                            f32::NEG_INFINITY
                        };
                    } else {
                        s[t * 4 + x] = if key < len {
                            s[t * 4 + x]
                        } else {
                            f32::NEG_INFINITY
                        };
                    }
                }
            }
        }

        // Online softmax. Key 0 is in every row's first tile, so the maxima are finite from
        // then on and a fully masked row of a later tile only contributes zeros.
        let mut n0 = m0;
        let mut n1 = m1;
        for t in 0..N / 8 {
            n0 = max(n0, max(s[t * 4], s[t * 4 + 1]));
            n1 = max(n1, max(s[t * 4 + 2], s[t * 4 + 3]));
        }
        for d in [1, 2] {
            n0 = max(n0, shfl_xor(n0, d));
            n1 = max(n1, shfl_xor(n1, d));
        }
        let c0 = ex2_approx_ftz(m0 - n0);
        let c1 = ex2_approx_ftz(m1 - n1);
        m0 = n0;
        m1 = n1;
        l0 = l0 * c0;
        l1 = l1 * c1;
        for t in 0..D / 8 {
            acc[t * 4] = acc[t * 4] * c0;
            acc[t * 4 + 1] = acc[t * 4 + 1] * c0;
            acc[t * 4 + 2] = acc[t * 4 + 2] * c1;
            acc[t * 4 + 3] = acc[t * 4 + 3] * c1;
        }
        for t in 0..N / 8 {
            s[t * 4] = ex2_approx_ftz(s[t * 4] - n0);
            s[t * 4 + 1] = ex2_approx_ftz(s[t * 4 + 1] - n0);
            s[t * 4 + 2] = ex2_approx_ftz(s[t * 4 + 2] - n1);
            s[t * 4 + 3] = ex2_approx_ftz(s[t * 4 + 3] - n1);
            l0 = l0 + s[t * 4] + s[t * 4 + 1];
            l1 = l1 + s[t * 4 + 2] + s[t * 4 + 3];
        }

        // O += P·V, P's 16 keys of step kk being S tiles 2·kk and 2·kk + 1.
        for kk in 0..N / 16 {
            let lo = kk * 8;
            let hi = lo + 4;
            let a = [
                M::pack(s[lo + 1], s[lo]),
                M::pack(s[lo + 3], s[lo + 2]),
                M::pack(s[hi + 1], s[hi]),
                M::pack(s[hi + 3], s[hi + 2]),
            ];
            for dj in 0..D / 16 {
                let b = ldmatrix_x4_trans(words, vb + v_lane + kk * 16 * pitch + dj * 8);
                for half in 0..2 {
                    let at = (dj * 2 + half) * 4;
                    let d = M::mma(
                        a,
                        [b[half * 2], b[half * 2 + 1]],
                        [acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
                    );
                    for x in 0..4 {
                        acc[at + x] = d[x];
                    }
                }
            }
        }
    }
    cp_async_wait(0);

    // The four lanes of a quad hold a row's sums between them.
    for d in [1, 2] {
        l0 = l0 + shfl_xor(l0, d);
        l1 = l1 + shfl_xor(l1, d);
    }
    let inv0 = 1.0 / l0;
    let inv1 = 1.0 / l1;
    if row_lo < len {
        let at = (start + row_lo) * q_stride + h * D + 2 * t4;
        for t in 0..D / 8 {
            o.store_vec::<2>(
                at + t * 8,
                [(acc[t * 4] * inv0) as T, (acc[t * 4 + 1] * inv0) as T],
            );
        }
        if t4 == 0 {
            lse[h * tokens + start + row_lo] = (m0 + log2(l0)) * 0.6931472;
        }
    }
    if row_hi < len {
        let at = (start + row_hi) * q_stride + h * D + 2 * t4;
        for t in 0..D / 8 {
            o.store_vec::<2>(
                at + t * 8,
                [(acc[t * 4 + 2] * inv1) as T, (acc[t * 4 + 3] * inv1) as T],
            );
        }
        if t4 == 0 {
            lse[h * tokens + start + row_hi] = (m1 + log2(l1)) * 0.6931472;
        }
    }
}
