//! The tensor-core GEMM in `#[kernel]` (sm_80+): bf16/f16 inputs through `ldmatrix` and
//! `mma.sync.m16n8k16`, f32 inputs as TF32 through `mma.sync.m16n8k8`, f32 accumulation.
//!
//! A 128×128 tile per block, 8 warps as 2 (m) × 4 (n), each warp a 64×32 block of 4 × 4 mma
//! tiles. Slabs of 64 bytes of k (32 bf16/f16 or 16 f32 elements) flow through a four-stage
//! `cp.async` pipeline into padded dynamic shared memory: three slabs are in flight while one
//! is multiplied, with one barrier per slab. Shared memory is addressed in 32-bit words
//! (`words`), and element by element (`elems`) where a slab is filled without `cp.async`.
//!
//! Shared rows (in words): k-contiguous operands hold a row of m or n per 64 bytes of k plus
//! 16 of padding (20 words); the others a row of k per 128 elements plus padding (68 words for
//! 16-bit elements, 136 for f32), so `ldmatrix` and the fragment loads hit distinct banks.
//!
//! Instances: the input `T`, the output `O`, the `mma` flavour `M` (the input's), and the
//! layout as `A_K` (A stored `m × k`) and `B_K` (B stored `n × k`): NN `<1, 0>`, NT `<1, 1>`,
//! TN `<0, 0>`.

use kernel_macros::{device, kernel};

/// One warp's `acc + a·b` on an m16n8 tile, for the input type's `mma.sync`.
#[allow(dead_code)]
pub trait TileMma {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4];
}

/// bf16 inputs, k = 16 a step.
pub struct Bf16Mma;
/// f16 inputs, k = 16 a step.
pub struct F16Mma;
/// f32 inputs read as TF32 (the tensor core uses the top 19 bits of each), k = 8 a step.
pub struct Tf32Mma;

#[device(crate = crate::lang)]
impl TileMma for Bf16Mma {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
        mma_m16n8k16_bf16(a, b, acc)
    }
}

#[device(crate = crate::lang)]
impl TileMma for F16Mma {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
        mma_m16n8k16_f16(a, b, acc)
    }
}

#[device(crate = crate::lang)]
impl TileMma for Tf32Mma {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
        mma_m16n8k8_tf32(a, b, acc)
    }
}

/// Where this thread's two 16-byte chunks of an operand's slab sit, the same for every slab:
/// `[mn0, mn1, k0, k1, at0, at1]`, each chunk's row of m or n (its first, for mn-contiguous
/// operands), its first k within the slab, and its word within the shared slab. `pitch`:
/// words between shared rows.
#[device(crate = crate::lang)]
fn slab_chunks<T>(k_contiguous: u32, pitch: u32, tile0: u32, tid: u32) -> [u32; 6] {
    // Chunks per shared row: four along 64 bytes of k, or a row of 128 elements.
    let per_row = if k_contiguous == 1 { 4 } else { 128 / T::VEC };
    let mut at = [0u32; 6];
    for i in 0..2 {
        let chunk = tid + i * 256;
        let row = chunk / per_row;
        let q = chunk % per_row;
        if k_contiguous == 1 {
            at[i] = tile0 + row;
            at[2 + i] = q * T::VEC;
        } else {
            at[i] = tile0 + q * T::VEC;
            at[2 + i] = row;
        }
        at[4 + i] = row * pitch + q * 4;
    }
    at
}

/// Starts (or, without the vector flag, does) the loads of one operand's slab at `k0` into
/// the shared slab at word `dst`, this thread's chunks placed by `chunks` ([`slab_chunks`]):
/// by `cp.async`, zero-filled past the matrix (`vec_ok` guarantees a chunk is wholly in or
/// out), or element by element with a bounds check each.
#[device(crate = crate::lang)]
fn issue_slab<T>(
    words: &mut [u32],
    elems: &mut [T],
    x: &[T],
    k_contiguous: u32,
    vec_ok: bool,
    chunks: [u32; 6],
    dst: u32,
    k0: u32,
    extent: u32,
    ld: u32,
    k: u32,
) {
    if vec_ok {
        for i in 0..2 {
            let (mn, kk) = (chunks[i], k0 + chunks[2 + i]);
            let first = if k_contiguous == 1 {
                mn * ld + kk
            } else {
                kk * ld + mn
            };
            cp_async_16_or(words, dst + chunks[4 + i], x, first, mn < extent && kk < k);
        }
    } else {
        for i in 0..2 {
            let (mn, kk) = (chunks[i], k0 + chunks[2 + i]);
            let first = if k_contiguous == 1 {
                mn * ld + kk
            } else {
                kk * ld + mn
            };
            let at = (dst + chunks[4 + i]) * (T::VEC / 4);
            for e in 0..T::VEC {
                let inside = if k_contiguous == 1 {
                    mn < extent && kk + e < k
                } else {
                    mn + e < extent && kk < k
                };
                let mut v = 0.0 as T;
                if inside {
                    v = x[first + e];
                }
                elems[at + e] = v;
            }
        }
    }
}

/// `C = act(α·op(A)·op(B) + β·C + bias) + residual` for batch `block_idx().z` (matrices
/// `stride_*` elements apart), tile `(block_idx().y, block_idx().x)` of 128 × 128; `flags`
/// as `kernels_gen::gemm::epilogue` defines them (with its f32-copy bit, each value also goes
/// unrounded to `copy`, laid out like `C`). Dynamic shared memory: four stages of both
/// operands' slabs (`kernels_gen::gemm::tensor_core::mma_shared_bytes`).
#[kernel(crate = crate::lang, block = 256, instances(
    <bf16, f32, Bf16Mma, 1, 0>, <bf16, f32, Bf16Mma, 1, 1>, <bf16, f32, Bf16Mma, 0, 0>,
    <bf16, bf16, Bf16Mma, 1, 0>, <bf16, bf16, Bf16Mma, 1, 1>, <bf16, bf16, Bf16Mma, 0, 0>,
    <f16, f32, F16Mma, 1, 0>, <f16, f32, F16Mma, 1, 1>, <f16, f32, F16Mma, 0, 0>,
    <f16, f16, F16Mma, 1, 0>, <f16, f16, F16Mma, 1, 1>, <f16, f16, F16Mma, 0, 0>,
    <f32, f32, Tf32Mma, 1, 0>, <f32, f32, Tf32Mma, 1, 1>, <f32, f32, Tf32Mma, 0, 0>,
))]
pub fn gemm_mma<T: Element, O: Element, M: TileMma, const A_K: u32, const B_K: u32>(
    a: &[T],
    b: &[T],
    c: &mut [O],
    copy: &mut [f32],
    bias: &[T],
    residual: &[T],
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    alpha: f32,
    beta: f32,
    flags: u32,
) {
    let batch = block_idx().z as u64;
    let a = &a[batch * stride_a as u64..];
    let b = &b[batch * stride_b as u64..];
    let c = &mut c[batch * stride_c as u64..];
    let copy = &mut copy[batch * stride_c as u64..];
    let residual = &residual[batch * stride_c as u64..];
    let words = dynamic_shared::<u32>();
    let elems = dynamic_shared::<T>();
    let tid = thread_idx().x;
    let tile_n = block_idx().x * 128;
    let tile_m = block_idx().y * 128;
    let vec_a = flags & 16 != 0;
    let vec_b = flags & 32 != 0;

    // Shared rows and slabs, in words (see the module docs); a stage is A's slab, then B's.
    let pa = if A_K == 1 {
        20u32
    } else if T::VEC == 4 {
        136u32
    } else {
        68u32
    };
    let pb = if B_K == 1 {
        20u32
    } else if T::VEC == 4 {
        136u32
    } else {
        68u32
    };
    let slab_a = if A_K == 1 { 128 * 20u32 } else { 2176u32 };
    let slab_b = if B_K == 1 { 128 * 20u32 } else { 2176u32 };
    let stage = slab_a + slab_b;
    // k elements per slab.
    let bk = 4 * T::VEC;
    let slabs = (k + bk - 1) / bk;

    // Warp (wm, wn) of 2 × 4 owns rows 64·wm and columns 32·wn of the tile.
    let lane = lane_id();
    let warp = tid >> 5;
    let warp_m0 = (warp >> 2) * 64;
    let warp_n0 = (warp & 3) * 32;
    // This lane's first fragment address (mma tile (0, 0), k step 0) in each slab, in words:
    // the row `ldmatrix` reads for it, or for TF32 mn-contiguous operands its A element
    // (g, t) and B element (k t, n g).
    let i = lane >> 3;
    let r = lane & 7;
    let g = lane >> 2;
    let t4 = lane & 3;
    let a_lane = if A_K == 1 {
        (warp_m0 + (lane & 15)) * pa + (lane >> 4) * 4
    } else if T::VEC == 4 {
        t4 * pa + warp_m0 + g
    } else {
        (((i >> 1) << 3) + r) * pa + (warp_m0 + ((i & 1) << 3)) / 2
    };
    let b_lane = if B_K == 1 {
        (warp_n0 + ((i >> 1) << 3) + r) * pb + (i & 1) * 4
    } else if T::VEC == 4 {
        t4 * pb + warp_n0 + g
    } else {
        (((i & 1) << 3) + r) * pb + (warp_n0 + ((i >> 1) << 3)) / 2
    };

    let chunks_a = slab_chunks(A_K, pa, tile_m, tid);
    let chunks_b = slab_chunks(B_K, pb, tile_n, tid);
    // acc[(mi·4 + ni)·4 + r]: mma tile (mi, ni) of the warp's 4 × 4.
    let mut acc = [0.0f32; 64];
    // Slabs 0, 1, 2 in flight, one commit group each (empty past the end).
    for st in 0..3u32 {
        if st < slabs {
            let dst = st * stage;
            issue_slab(
                words,
                elems,
                a,
                A_K,
                vec_a,
                chunks_a,
                dst,
                st * bk,
                m,
                lda,
                k,
            );
            issue_slab(
                words,
                elems,
                b,
                B_K,
                vec_b,
                chunks_b,
                dst + slab_a,
                st * bk,
                n,
                ldb,
                k,
            );
        }
        cp_async_commit();
    }
    for t in 0..slabs {
        // Slab t has landed for this thread, then (barrier) for every thread; the barrier
        // also means every warp is done with slab t - 1, whose stage is refilled next.
        cp_async_wait(2);
        sync_threads();
        let next = t + 3;
        if next < slabs {
            let dst = (next & 3) * stage;
            issue_slab(
                words,
                elems,
                a,
                A_K,
                vec_a,
                chunks_a,
                dst,
                next * bk,
                m,
                lda,
                k,
            );
            issue_slab(
                words,
                elems,
                b,
                B_K,
                vec_b,
                chunks_b,
                dst + slab_a,
                next * bk,
                n,
                ldb,
                k,
            );
        }
        cp_async_commit();
        let sa = (t & 3) * stage + a_lane;
        let sb = (t & 3) * stage + slab_a + b_lane;
        // Two k steps a slab (16 elements of 16-bit inputs, 8 of TF32).
        for ks in 0..2 {
            let mut af = [0u32; 16];
            for mi in 0..4 {
                if A_K == 1 {
                    // Matrices (rows 0-7 | 8-15) × (k halves), for TF32 the a0..a3 pairs.
                    let f = ldmatrix_x4(words, sa + mi * 16 * pa + ks * 8);
                    for q in 0..4 {
                        af[mi * 4 + q] = f[q];
                    }
                } else if T::VEC == 4 {
                    // `ldmatrix` transposes 16-bit elements only: TF32 word by word.
                    for q in 0..4 {
                        let row = ks * 8 + 4 * (q >> 1);
                        af[mi * 4 + q] = words[sa + row * pa + mi * 16 + 8 * (q & 1)];
                    }
                } else {
                    let f = ldmatrix_x4_trans(words, sa + ks * 16 * pa + mi * 8);
                    for q in 0..4 {
                        af[mi * 4 + q] = f[q];
                    }
                }
            }
            let mut bf = [0u32; 8];
            for nj in 0..2 {
                if B_K == 1 {
                    // Registers (0, 1) are n block 2·nj, (2, 3) block 2·nj + 1.
                    let f = ldmatrix_x4(words, sb + nj * 16 * pb + ks * 8);
                    for q in 0..4 {
                        bf[nj * 4 + q] = f[q];
                    }
                } else if T::VEC == 4 {
                    for q in 0..4 {
                        let ni = nj * 2 + (q >> 1);
                        let row = ks * 8 + 4 * (q & 1);
                        bf[nj * 4 + q] = words[sb + row * pb + ni * 8];
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
                    let d = M::mma(
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
    }
    cp_async_wait(0);

    // Accumulator q of tile (mi, ni) is row g (+8 for q ≥ 2), column 2·t4 (+1 for odd q).
    let parts = epilogue_parts(flags);
    let row0 = tile_m + warp_m0 + g;
    let col0 = tile_n + warp_n0 + 2 * t4;
    // A plain product (α = 1, β = 0, nothing fused) with even pitches stores column pairs; a
    // 16-bit one whose n, ldc and batch stride are multiples of 8 stores whole tiles through
    // shared memory instead, 64-byte row pieces a warp's four lanes at a time (a pair store
    // fills half of each 32-byte sector it touches).
    let plain = flags & 64 != 0;
    let whole = tile_m + 128 <= m && tile_n + 128 <= n;
    if O::VEC == 8 && plain && flags & 512 != 0 && whole {
        // The stages are free once every warp has read its last slab. A warp's 64 × 32
        // outputs take 1024 words from word 1024·warp: row r's four 16-byte chunks, chunk j
        // at j ^ (r / 2 % 4), so neither the pair writes nor the chunk reads share a bank.
        sync_threads();
        let mine = warp * 1024;
        for mi in 0..4 {
            for half in 0..2 {
                let r = mi * 16 + half * 8 + g;
                for ni in 0..4 {
                    let q = (mi * 4 + ni) * 4 + half * 2;
                    let word = mine + r * 16 + ((ni ^ ((r >> 1) & 3)) << 2) + t4;
                    // 16-bit outputs are the input's type.
                    elems.store_vec::<2>(2 * word, [acc[q] as T, acc[q + 1] as T]);
                }
            }
        }
        sync_warp();
        let chunk = lane & 3;
        let rows = &mut c[(tile_m + warp_m0) * ldc + tile_n + warp_n0 + 8 * chunk..];
        for e in 0..8 {
            let r = (lane >> 2) + 8 * e;
            let w = words.load_vec::<4>(mine + r * 16 + ((chunk ^ ((r >> 1) & 3)) << 2));
            rows.store_words::<4>(r * ldc, w);
        }
    } else if plain {
        for mi in 0..4 {
            for half in 0..2 {
                let row = row0 + mi * 16 + half * 8;
                if row < m {
                    let out = &mut c[row * ldc + col0..];
                    for ni in 0..4 {
                        if col0 + ni * 8 < n {
                            let q = (mi * 4 + ni) * 4 + half * 2;
                            out.store_vec::<2>(ni * 8, [acc[q] as O, acc[q + 1] as O]);
                        }
                    }
                }
            }
        }
    } else {
        for mi in 0..4 {
            for half in 0..2 {
                let row = row0 + mi * 16 + half * 8;
                if row < m {
                    let row_off = row * ldc;
                    for ni in 0..4 {
                        for odd in 0..2 {
                            let col = col0 + ni * 8 + odd;
                            if col < n {
                                let v = acc[(mi * 4 + ni) * 4 + half * 2 + odd];
                                let at = row_off + col;
                                finish(c, copy, bias, residual, at, col, v, alpha, beta, parts);
                            }
                        }
                    }
                }
            }
        }
    }
}
