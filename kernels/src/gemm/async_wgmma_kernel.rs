//! The Hopper GEMM for rows the copy engine cannot address (leading dimensions or batch
//! strides that are not 16-byte aligned), in `#[kernel]` (sm_90a): bf16 or f16 inputs staged
//! by `cp.async` into shared memory, `wgmma.mma_async.m64n128k16` reading both operands
//! through descriptors, f32 accumulation in registers, and `gemm/finish.rs`'s epilogue into an
//! f32 or same-type output.
//!
//! Instances: the input `T`, the output `O`, `HALF` (1 for f16 inputs), and the layout as
//! `A_K` (A stored `m × k`) and `B_K` (B stored `n × k`): NN `<1, 0>`, NT `<1, 1>`, TN
//! `<0, 0>`, in the order of `kernels_gen::gemm::wgmma::WGMMA_SPECS`, whose builder kernel
//! (`wgmma.rs`) this one computes bit for bit.
//!
//! A 128×128 tile per block of two warpgroups, each multiplying its 64 rows of A by the 128
//! columns of B. Slabs of 64 k (128 bytes a row) land in the unswizzled K-major core-matrix
//! layout (8 rows × 16 bytes a core matrix, K-neighbours 128 bytes apart, 8-row groups 1 KiB
//! apart), four stages deep: one slab multiplied, one whose `wgmma`s may still be in flight,
//! two landing. A k-contiguous operand goes by 16-byte `cp.async` (zero-filled past the
//! matrix); the other is transposed through registers, its words loaded a slab ahead so their
//! latency overlaps a slab of `wgmma`. Without the vector flags (odd extents, leading
//! dimensions or strides) each element is loaded on its own, bounds-checked.

use kernel_macros::{device, kernel};

/// Rows and columns of a tile.
pub const TILE: u32 = 128;
/// Threads per block: two warpgroups.
pub const THREADS: u32 = 256;
/// Dynamic shared memory: four stages of A's and B's 128 × 64 slabs of 16-bit elements.
pub const SHARED_BYTES: u32 = 4 * 2 * TILE * 64 * 2;

/// Starts (or, without the vector flag, does) the copy of a k-contiguous operand's slab at
/// `k0` (rows `tile0..` of `x`, `ld` apart) into the core-matrix slab at word `dst`. Eight
/// neighbouring threads take the eight rows of one core matrix (16 bytes each, distinct bank
/// groups).
#[device(crate = crate::lang)]
fn fill_k_major<T>(
    words: &mut [u32],
    elems: &mut [T],
    x: &[T],
    vec_ok: bool,
    tid: u32,
    dst: u32,
    k0: u32,
    tile0: u32,
    extent: u32,
    ld: u32,
    k: u32,
) {
    if vec_ok {
        for i in 0..4 {
            let c = tid + i * 256;
            let group = c >> 6;
            let mn = tile0 + group * 8 + (c & 7);
            let kk = k0 + ((c >> 3) & 7) * 8;
            let at = dst + group * 256 + ((c >> 3) & 7) * 32 + (c & 7) * 4;
            cp_async_16_or(words, at, x, mn * ld + kk, mn < extent && kk < k);
        }
    } else {
        for i in 0..4 {
            let c = tid + i * 256;
            let group = c >> 6;
            let mn = tile0 + group * 8 + (c & 7);
            let kk = k0 + ((c >> 3) & 7) * 8;
            let at = (dst + group * 256 + ((c >> 3) & 7) * 32 + (c & 7) * 4) * 2;
            for e in 0..8 {
                let mut v = 0.0 as T;
                if mn < extent && kk + e < k {
                    v = x[mn * ld + kk + e];
                }
                elems[at + e] = v;
            }
        }
    }
}

/// The words an mn-contiguous operand's slab at `k0` contributes from this thread (vector
/// flag on: even extents and pitches): per pass, for 8 consecutive k, the word holding
/// elements `mn` and `mn + 1`, zero outside the matrix. A warp's loads are 128 contiguous
/// bytes.
#[device(crate = crate::lang)]
fn load_pairs<T>(
    x: &[T],
    tid: u32,
    k0: u32,
    tile0: u32,
    extent: u32,
    ld: u32,
    k: u32,
) -> [u32; 16] {
    let mut w = [0u32; 16];
    for p in 0..2 {
        let c = (tid >> 2) + p * 64;
        let mn = tile0 + (c & 15) * 8 + (tid & 3) * 2;
        for kk in 0..8 {
            let kabs = k0 + (c >> 4) * 8 + kk;
            let pair = x.load_words_or::<1>(kabs * ld + mn, kabs < k && mn < extent);
            w[p * 8 + kk] = pair[0];
        }
    }
    w
}

/// Stores the words of [`load_pairs`] transposed into the core-matrix slab at word `dst`: the
/// low halves are row `mn`'s 8 k, the high halves row `mn + 1`'s, one 16-byte store each. Odd
/// mn groups store their second row first, so the eight threads of each store phase hit eight
/// different bank groups.
#[device(crate = crate::lang)]
fn store_pairs(words: &mut [u32], w: [u32; 16], tid: u32, dst: u32) {
    for p in 0..2 {
        let c = (tid >> 2) + p * 64;
        let odd = (c & 15) & 1;
        let core = dst + (c & 15) * 256 + (c >> 4) * 32;
        let first = 2 * (tid & 3) + odd;
        let mut lo = [0u32; 4];
        let mut hi = [0u32; 4];
        for j in 0..4 {
            let x0 = w[p * 8 + 2 * j];
            let x1 = w[p * 8 + 2 * j + 1];
            lo[j] = (x0 & 0xffff) | (x1 << 16);
            hi[j] = (x0 >> 16) | (x1 & 0xffff_0000);
        }
        let mut one = [0u32; 4];
        let mut two = [0u32; 4];
        for j in 0..4 {
            one[j] = if odd == 1 { hi[j] } else { lo[j] };
            two[j] = if odd == 1 { lo[j] } else { hi[j] };
        }
        words.store_vec::<4>(core + first * 4, one);
        words.store_vec::<4>(core + (first ^ 1) * 4, two);
    }
}

/// [`load_pairs`] and [`store_pairs`] without the vector flag: element by element, each
/// bounds-checked, straight into the core-matrix slab at word `dst`.
#[device(crate = crate::lang)]
fn fill_transposed<T>(
    elems: &mut [T],
    x: &[T],
    tid: u32,
    dst: u32,
    k0: u32,
    tile0: u32,
    extent: u32,
    ld: u32,
    k: u32,
) {
    for p in 0..2 {
        let c = (tid >> 2) + p * 64;
        let q = tid & 3;
        let mn = tile0 + (c & 15) * 8 + q * 2;
        let core = dst * 2 + (c & 15) * 512 + (c >> 4) * 64 + q * 16;
        for kk in 0..8 {
            let kabs = k0 + (c >> 4) * 8 + kk;
            for e in 0..2 {
                let mut v = 0.0 as T;
                if kabs < k && mn + e < extent {
                    v = x[kabs * ld + mn + e];
                }
                elems[core + e * 8 + kk] = v;
            }
        }
    }
}

/// `C = act(α·op(A)·op(B) + β·C + bias) + residual` for batch `block_idx().z` (matrices
/// `stride_*` elements apart), tile `(block_idx().y, block_idx().x)` of 128 × 128; `flags` as
/// `kernels_gen::gemm::epilogue` defines them (with its f32-copy bit, each value also goes
/// unrounded to `copy`, laid out like `C`). Dynamic shared memory: [`SHARED_BYTES`].
#[kernel(crate = crate::lang, block = 256, needs = sm_90a, instances(
    <bf16, f32, 0, 1, 0>, <bf16, f32, 0, 1, 1>, <bf16, f32, 0, 0, 0>,
    <bf16, bf16, 0, 1, 0>, <bf16, bf16, 0, 1, 1>, <bf16, bf16, 0, 0, 0>,
    <f16, f32, 1, 1, 0>, <f16, f32, 1, 1, 1>, <f16, f32, 1, 0, 0>,
    <f16, f16, 1, 1, 0>, <f16, f16, 1, 1, 1>, <f16, f16, 1, 0, 0>,
))]
pub fn gemm_async_wgmma<T: Element, O: Element, const HALF: u32, const A_K: u32, const B_K: u32>(
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
    // A stage is A's slab (4096 words), then B's.
    let words = dynamic_shared::<u32, { 4 * 2 * 4096 }>();
    let elems = dynamic_shared::<T>();
    let tid = thread_idx().x;
    let tile_n = block_idx().x * 128;
    let tile_m = block_idx().y * 128;
    let vec_a = flags & 16 != 0;
    let vec_b = flags & 32 != 0;
    let slabs = (k + 63) / 64;

    // The transposed operands' words of the next slab to store (vector flag on).
    let mut next_a = [0u32; 16];
    let mut next_b = [0u32; 16];
    // Slabs 0 and 1 in flight, one commit group each (empty past the end); slab 2 loading
    // into registers.
    for st in 0..2u32 {
        if st < slabs {
            let dst = st * 8192;
            if A_K == 1 {
                fill_k_major(words, elems, a, vec_a, tid, dst, st * 64, tile_m, m, lda, k);
            } else if vec_a {
                let w = load_pairs(a, tid, st * 64, tile_m, m, lda, k);
                store_pairs(words, w, tid, dst);
            } else {
                fill_transposed(elems, a, tid, dst, st * 64, tile_m, m, lda, k);
            }
            if B_K == 1 {
                fill_k_major(
                    words,
                    elems,
                    b,
                    vec_b,
                    tid,
                    dst + 4096,
                    st * 64,
                    tile_n,
                    n,
                    ldb,
                    k,
                );
            } else if vec_b {
                let w = load_pairs(b, tid, st * 64, tile_n, n, ldb, k);
                store_pairs(words, w, tid, dst + 4096);
            } else {
                fill_transposed(elems, b, tid, dst + 4096, st * 64, tile_n, n, ldb, k);
            }
        }
        cp_async_commit();
    }
    if 2 < slabs {
        if A_K == 0 && vec_a {
            let w = load_pairs(a, tid, 128, tile_m, m, lda, k);
            for i in 0..16 {
                next_a[i] = w[i];
            }
        }
        if B_K == 0 && vec_b {
            let w = load_pairs(b, tid, 128, tile_n, n, ldb, k);
            for i in 0..16 {
                next_b[i] = w[i];
            }
        }
    }

    // Warpgroup g multiplies rows 64g.. of the A slab (eight 1 KiB row groups, 4096 elements).
    let wg = tid >> 7;
    let mut acc = [0.0f32; 64];
    for t in 0..slabs {
        // Slab t has landed (this thread's copies) and is visible to the async proxy; after
        // the barrier every thread's has, and every thread has retired the `wgmma`s of slab
        // t - 2, whose stage is refilled below.
        cp_async_wait(1);
        fence_proxy_async();
        sync_threads();
        let sa = (t & 3) * 16384 + wg * 4096;
        let sb = (t & 3) * 16384 + 8192;
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            // A k16 step is the next two core matrices along k: 256 bytes.
            let da = wgmma_desc(elems, sa + ks * 128, 128, 1024, 0);
            let db = wgmma_desc(elems, sb + ks * 128, 128, 1024, 0);
            if HALF == 1 {
                wgmma_f16(&mut acc, da, db, true, false, false);
            } else {
                wgmma_bf16(&mut acc, da, db, true, false, false);
            }
        }
        wgmma_commit_group();
        // The copies of slab t + 2 overlap this slab's products.
        let next = t + 2;
        if next < slabs {
            let dst = (next & 3) * 8192;
            let k0 = next * 64;
            if A_K == 1 {
                fill_k_major(words, elems, a, vec_a, tid, dst, k0, tile_m, m, lda, k);
            } else if vec_a {
                store_pairs(words, next_a, tid, dst);
            } else {
                fill_transposed(elems, a, tid, dst, k0, tile_m, m, lda, k);
            }
            if B_K == 1 {
                fill_k_major(
                    words,
                    elems,
                    b,
                    vec_b,
                    tid,
                    dst + 4096,
                    k0,
                    tile_n,
                    n,
                    ldb,
                    k,
                );
            } else if vec_b {
                store_pairs(words, next_b, tid, dst + 4096);
            } else {
                fill_transposed(elems, b, tid, dst + 4096, k0, tile_n, n, ldb, k);
            }
        }
        let after = next + 1;
        if after < slabs {
            if A_K == 0 && vec_a {
                let w = load_pairs(a, tid, after * 64, tile_m, m, lda, k);
                for i in 0..16 {
                    next_a[i] = w[i];
                }
            }
            if B_K == 0 && vec_b {
                let w = load_pairs(b, tid, after * 64, tile_n, n, ldb, k);
                for i in 0..16 {
                    next_b[i] = w[i];
                }
            }
        }
        cp_async_commit();
        // Keep this slab's group in flight while the next one is prepared.
        wgmma_wait_group(1);
    }
    wgmma_wait_group(0);
    cp_async_wait(0);

    // Thread t of the warpgroup holds rows 16·warp + g (+8) and column pairs 8j + 2·t4.
    let lane = lane_id();
    let g = lane >> 2;
    let t4 = lane & 3;
    let top = tile_m + wg * 64;
    let row0 = top + ((tid >> 5) & 3) * 16 + g;
    let col0 = tile_n + 2 * t4;
    if flags & 64 != 0 && top + 64 <= m && tile_n + 128 <= n {
        // A plain product over a whole warpgroup tile with even pitches: column pairs.
        for half in 0..2 {
            let out = &mut c[(row0 + half * 8) * ldc + col0..];
            for j in 0..16 {
                let pair = [acc[4 * j + 2 * half] as O, acc[4 * j + 2 * half + 1] as O];
                out.store_vec::<2>(8 * j, pair);
            }
        }
    } else {
        let parts = epilogue_parts(flags);
        for half in 0..2 {
            let row = row0 + half * 8;
            if row < m {
                let row_off = row * ldc;
                for j in 0..16 {
                    for odd in 0..2 {
                        let col = col0 + 8 * j + odd;
                        if col < n {
                            let v = acc[4 * j + 2 * half + odd];
                            let at = row_off + col;
                            finish(c, copy, bias, residual, at, col, v, alpha, beta, parts);
                        }
                    }
                }
            }
        }
    }
}
