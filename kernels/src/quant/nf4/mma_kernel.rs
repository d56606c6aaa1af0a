//! The tensor-core product through an NF4 weight (sm_80+): bf16 activations through
//! `cp.async` and `ldmatrix`, the weight decoded from its codes into bf16 in shared memory,
//! `mma.sync.m16n8k16` with f32 accumulation. W is never written to global memory.
//!
//! The tiling is the library GEMM's (`gemm/mma_kernel.rs`): a 128×128 output tile per block,
//! 8 warps as 2 (m) × 4 (n) of 64×32, slabs of 32 k elements in four stages. The activations
//! of slab `t + 3` are in flight by `cp.async` while slab `t` is multiplied; the codes of slab
//! `t + 3` are loaded into registers before the multiply and decoded into their stage after
//! it, so their latency hides behind the tensor cores.
//!
//! `B_K = 1` is the forward `y = x·Wᵀ`: the output's columns are W's rows, the reduction runs
//! along W's rows (k-contiguous B, shared rows of 20 words). `B_K = 0` is the input gradient
//! `dx = dy·W`: the reduction runs down W's columns (B stored reduction-major, shared rows of
//! 128 elements plus padding, read by `ldmatrix.trans`).

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;
/// Output tile.
pub(crate) const TILE: u32 = 128;

/// Dynamic shared bytes of an instance: four stages of the A slab (128 rows of 20 words)
/// and the B slab (the same for `B_K = 1`, 32 rows of 68 words for `B_K = 0`).
pub(crate) const fn shared_bytes(b_k: u32) -> u32 {
    let b = if b_k == 1 { 128 * 20 } else { 32 * 68 };
    4 * (128 * 20 + b) * 4
}

/// `c = a·op(W)` for `a` of `m × kred` (bf16, row-major) and W in NF4 of `rows × cols`:
/// `op(W) = Wᵀ` (`kred = cols`, `n = rows`) for `B_K = 1`, `W` (`kred = rows`, `n = cols`) for
/// `B_K = 0`; `c` is `m × n`. `vec_a`: `kred` is a multiple of 8, so the rows of `a` are
/// 16-byte aligned for `cp.async`. Grid: `(ceil(n / 128), ceil(m / 128))` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(O in [bf16, f32], B_K in [1, 0]))]
pub fn nf4_mma<O: Element, const B_K: u32>(
    a: &[bf16],
    codes: &[u32],
    absmax: &[f32],
    qabs: &[u32],
    code2: &[f32],
    scale2: &[f32],
    offset: f32,
    double: u32,
    c: &mut [O],
    m: u32,
    n: u32,
    kred: u32,
    cols: u32,
    vec_a: u32,
) {
    let words = dynamic_shared::<u32>();
    let elems = dynamic_shared::<bf16>();
    let table = shared_array::<f32, 16>();
    let tid = thread_idx().x;
    if tid < 16 {
        table[tid] = nf4_value(tid);
    }
    sync_threads();
    let tile_n = block_idx().x * 128;
    let tile_m = block_idx().y * 128;
    let pa = 20u32;
    let pb = if B_K == 1 { 20u32 } else { 68u32 };
    let slab_a = 128 * 20u32;
    let slab_b = if B_K == 1 { 128 * 20u32 } else { 32 * 68u32 };
    let stage = slab_a + slab_b;
    let slabs = (kred + 31) / 32;
    let cw = cols >> 3;
    // Bounds of the W rows and columns a slab reads.
    let lim_r = if B_K == 1 { n } else { kred };
    let lim_c = if B_K == 1 { kred } else { n };

    let lane = lane_id();
    let warp = tid >> 5;
    let warp_m0 = (warp >> 2) * 64;
    let warp_n0 = (warp & 3) * 32;
    let i8 = lane >> 3;
    let r8 = lane & 7;
    let g = lane >> 2;
    let t4 = lane & 3;
    let a_lane = (warp_m0 + (lane & 15)) * pa + (lane >> 4) * 4;
    let b_lane = if B_K == 1 {
        (warp_n0 + ((i8 >> 1) << 3) + r8) * pb + (i8 & 1) * 4
    } else {
        (((i8 & 1) << 3) + r8) * pb + (warp_n0 + ((i8 >> 1) << 3)) / 2
    };

    // This thread's two 16-byte chunks of each slab: A rows and k offsets, B code positions.
    // A: 4 chunks a row of 32 k. B (B_K = 1): 4 code words a row of W (one per 8 k);
    // B (B_K = 0): 16 code words across 128 columns of W, a row of W per reduction step.
    let mut a_row = [0u32; 2];
    let mut a_k = [0u32; 2];
    let mut a_at = [0u32; 2];
    let mut b_r = [0u32; 2];
    let mut b_c = [0u32; 2];
    let mut b_at = [0u32; 2];
    for h in 0..2 {
        let chunk = tid + h * 256;
        a_row[h] = tile_m + chunk / 4;
        a_k[h] = (chunk % 4) * 8;
        a_at[h] = (chunk / 4) * pa + (chunk % 4) * 4;
        if B_K == 1 {
            // W row (an output column), k offset within the slab.
            b_r[h] = tile_n + chunk / 4;
            b_c[h] = (chunk % 4) * 8;
            b_at[h] = (chunk / 4) * pb + (chunk % 4) * 4;
        } else {
            // Reduction offset within the slab (a W row), W column.
            b_r[h] = chunk / 16;
            b_c[h] = tile_n + (chunk % 16) * 8;
            b_at[h] = (chunk / 16) * pb + (chunk % 16) * 4;
        }
    }

    let mut acc = [0.0f32; 64];
    let mut held = [0u32; 2];
    let mut held_scale = [0.0f32; 2];
    // Slabs 0, 1, 2: A by cp.async, B decoded straight into its stage.
    for st in 0..3u32 {
        if st < slabs {
            let dst = st * stage;
            for h in 0..2 {
                let (row, kk) = (a_row[h], st * 32 + a_k[h]);
                if vec_a != 0 {
                    cp_async_16_or(
                        words,
                        dst + a_at[h],
                        a,
                        row * kred + kk,
                        row < m && kk < kred,
                    );
                } else {
                    for e in 0..8 {
                        let mut v = 0.0 as bf16;
                        if row < m && kk + e < kred {
                            v = a[row * kred + kk + e];
                        }
                        elems[(dst + a_at[h]) * 2 + e] = v;
                    }
                }
            }
            for h in 0..2 {
                let wr = if B_K == 1 { b_r[h] } else { st * 32 + b_r[h] };
                let wc = if B_K == 1 { st * 32 + b_c[h] } else { b_c[h] };
                let inside = wr < lim_r && wc < lim_c;
                let mut word = 0u32;
                let mut s = 0.0f32;
                if inside {
                    let gw = wr * cw + (wc >> 3);
                    word = codes[gw];
                    s = block_absmax(absmax, qabs, code2, scale2, offset, double, gw >> 3);
                }
                let mut o = [0u32; 4];
                for e in 0..4 {
                    let hi = table[word_code(word, 2 * e + 1)] * s;
                    let lo = table[word_code(word, 2 * e)] * s;
                    o[e] = pack_bf16x2(hi, lo);
                }
                words.store_vec::<4>(dst + slab_a + b_at[h], o);
            }
        }
        cp_async_commit();
    }
    for t in 0..slabs {
        cp_async_wait(2);
        sync_threads();
        let next = t + 3;
        let dst = (next & 3) * stage;
        if next < slabs {
            for h in 0..2 {
                let (row, kk) = (a_row[h], next * 32 + a_k[h]);
                if vec_a != 0 {
                    cp_async_16_or(
                        words,
                        dst + a_at[h],
                        a,
                        row * kred + kk,
                        row < m && kk < kred,
                    );
                } else {
                    for e in 0..8 {
                        let mut v = 0.0 as bf16;
                        if row < m && kk + e < kred {
                            v = a[row * kred + kk + e];
                        }
                        elems[(dst + a_at[h]) * 2 + e] = v;
                    }
                }
            }
            // The codes of slab `next`, decoded after this slab's products.
            for h in 0..2 {
                let wr = if B_K == 1 { b_r[h] } else { next * 32 + b_r[h] };
                let wc = if B_K == 1 { next * 32 + b_c[h] } else { b_c[h] };
                let inside = wr < lim_r && wc < lim_c;
                held[h] = 0;
                held_scale[h] = 0.0;
                if inside {
                    let gw = wr * cw + (wc >> 3);
                    held[h] = codes[gw];
                    held_scale[h] =
                        block_absmax(absmax, qabs, code2, scale2, offset, double, gw >> 3);
                }
            }
        }
        cp_async_commit();
        let sa = (t & 3) * stage + a_lane;
        let sb = (t & 3) * stage + slab_a + b_lane;
        for ks in 0..2 {
            let mut af = [0u32; 16];
            for mi in 0..4 {
                let f = ldmatrix_x4(words, sa + mi * 16 * pa + ks * 8);
                for q in 0..4 {
                    af[mi * 4 + q] = f[q];
                }
            }
            let mut bf = [0u32; 8];
            for nj in 0..2 {
                if B_K == 1 {
                    let f = ldmatrix_x4(words, sb + nj * 16 * pb + ks * 8);
                    for q in 0..4 {
                        bf[nj * 4 + q] = f[q];
                    }
                } else {
                    let f = ldmatrix_x4_trans(words, sb + ks * 16 * pb + nj * 8);
                    for q in 0..4 {
                        bf[nj * 4 + q] = f[q];
                    }
                }
            }
            for mi in 0..4 {
                for ni in 0..4 {
                    let at = (mi * 4 + ni) * 4;
                    let d = mma_m16n8k16_bf16(
                        [af[mi * 4], af[mi * 4 + 1], af[mi * 4 + 2], af[mi * 4 + 3]],
                        [bf[ni * 2], bf[ni * 2 + 1]],
                        [acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
                    );
                    for q in 0..4 {
                        acc[at + q] = d[q];
                    }
                }
            }
        }
        if next < slabs {
            for h in 0..2 {
                let mut o = [0u32; 4];
                for e in 0..4 {
                    let hi = table[word_code(held[h], 2 * e + 1)] * held_scale[h];
                    let lo = table[word_code(held[h], 2 * e)] * held_scale[h];
                    o[e] = pack_bf16x2(hi, lo);
                }
                words.store_vec::<4>(dst + slab_a + b_at[h], o);
            }
        }
    }
    cp_async_wait(0);

    let row0 = tile_m + warp_m0 + g;
    let col0 = tile_n + warp_n0 + 2 * t4;
    for mi in 0..4 {
        for half in 0..2 {
            let row = row0 + mi * 16 + half * 8;
            if row < m {
                for ni in 0..4 {
                    for odd in 0..2 {
                        let col = col0 + ni * 8 + odd;
                        if col < n {
                            c[row * n + col] = acc[(mi * 4 + ni) * 4 + half * 2 + odd] as O;
                        }
                    }
                }
            }
        }
    }
}
