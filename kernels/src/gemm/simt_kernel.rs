//! The fp32 SIMT GEMM in `#[kernel]`: a 128×128 tile per block, 256 threads each
//! accumulating an 8×8 block in registers, slabs of 8 k double-buffered in shared memory with
//! one barrier per slab (the next slab is loaded into registers while the current one is
//! multiplied, and stored at the top of the next pass).
//!
//! Each thread owns rows `4·ty + {0..3}` and `64 + 4·ty + {0..3}` of the tile and the same
//! pattern of columns with `tx`, so its operands come from shared memory as two 16-byte loads
//! per operand and k step. Shared slabs are k-major (`[k][mn]`) whatever the operand's layout,
//! rows padded by 4 floats so the transposing stores of k-contiguous operands miss each
//! other's banks while rows stay 16-byte aligned.
//!
//! Instances: `A_K` (A stored k-contiguous, `m × k`) and `B_K` (B stored `n × k`), one per
//! [`Layout`](kernels_gen::gemm::Layout): NN `<1, 0>`, NT `<1, 1>`, TN `<0, 0>`.

use kernel_macros::{device, kernel};

/// Threads of a block: the kernel's `block` below.
pub(crate) const SIMT_THREADS: u32 = 256;
/// Rows and columns of C a block computes.
pub(crate) const SIMT_TILE: u32 = 128;

/// Whether element `j` of this thread's run of an operand's slab is inside the matrix: the
/// run starts at row `mn` (of m or n) and `gk`, and goes along k where `k_contiguous`.
#[device(crate = crate::lang)]
fn run_inside(k_contiguous: u32, j: u32, mn: u32, gk: u32, extent: u32, k: u32) -> bool {
    if k_contiguous == 1 {
        mn < extent && gk + j < k
    } else {
        gk < k && mn + j < extent
    }
}

/// This thread's run of four elements of an operand's slab, zero outside the matrix;
/// `first` is the run's first element. With `vec_ok` a run is wholly inside or outside the
/// matrix, so one 16-byte load serves (a branch, not `load_vec_or`, so that ptxas loads
/// straight into the result).
#[device(crate = crate::lang)]
fn load_run(
    x: &[f32],
    k_contiguous: u32,
    vec_ok: bool,
    first: u32,
    mn: u32,
    gk: u32,
    extent: u32,
    k: u32,
) -> [f32; 4] {
    let mut r = [0.0f32; 4];
    if vec_ok {
        if run_inside(k_contiguous, 0, mn, gk, extent, k) {
            let v = x.load_vec::<4>(first);
            for j in 0..4 {
                r[j] = v[j];
            }
        }
    } else {
        for j in 0..4 {
            if run_inside(k_contiguous, j, mn, gk, extent, k) {
                r[j] = x[first + j];
            }
        }
    }
    r
}

/// `C = act(α·op(A)·op(B) + β·C + bias) + residual` for batch `block_idx().z` (matrices
/// `stride_*` elements apart), tile `(block_idx().y, block_idx().x)` of 128 × 128; `flags`
/// as `kernels_gen::gemm::epilogue` defines them. NN runs two blocks an SM (one block's loads
/// in flight while the other multiplies, registers capped for that); NT and TN, whose slab
/// loads take more registers, are faster with one block and no cap (`bench_gemm`).
#[kernel(
    crate = crate::lang,
    instances(<1, 0>, <1, 1>, <0, 0>),
    block = 256,
    min_blocks = if A_K == 1 && B_K == 0 { 2 } else { 0 },
)]
pub fn gemm_simt<const A_K: u32, const B_K: u32>(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    bias: &[f32],
    residual: &[f32],
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
    let residual = &residual[batch * stride_c as u64..];
    // Two buffers of [A slab | B slab], each slab 8 rows of 132 floats.
    let tiles = shared_array::<f32, { 2 * 2 * 8 * 132 }>();
    let tid = thread_idx().x;
    let tile_n = block_idx().x * 128;
    let tile_m = block_idx().y * 128;
    let vec_a = flags & 16 != 0;
    let vec_b = flags & 32 != 0;

    // Each thread moves a run of four elements of each operand per slab: along k (two runs
    // a row) for k-contiguous operands, along m or n (32 runs a k row) otherwise.
    let (a_local, a_kk) = if A_K == 1 {
        (tid >> 1, (tid & 1) << 2)
    } else {
        ((tid & 31) << 2, tid >> 5)
    };
    let (b_local, b_kk) = if B_K == 1 {
        (tid >> 1, (tid & 1) << 2)
    } else {
        ((tid & 31) << 2, tid >> 5)
    };
    let a_mn = tile_m + a_local;
    let b_mn = tile_n + b_local;
    let a_row = a_mn * lda;
    let b_row = b_mn * ldb;
    let a_slot = a_kk * 132 + a_local;
    let b_slot = 8 * 132 + b_kk * 132 + b_local;

    let mut acc = [0.0f32; 64];
    // Slab 0 (zeros where k = 0).
    let mut ra = load_run(
        a,
        A_K,
        vec_a,
        if A_K == 1 {
            a_row + a_kk
        } else {
            a_kk * lda + a_mn
        },
        a_mn,
        a_kk,
        m,
        k,
    );
    let mut rb = load_run(
        b,
        B_K,
        vec_b,
        if B_K == 1 {
            b_row + b_kk
        } else {
            b_kk * ldb + b_mn
        },
        b_mn,
        b_kk,
        n,
        k,
    );
    let slabs = (k + 7) / 8;
    let ty = tid >> 4;
    let tx = tid & 15;
    let a_rel = ty * 4;
    let b_rel = 8 * 132 + tx * 4;
    for t in 0..slabs {
        let cur = (t & 1) * (2 * 8 * 132);
        if A_K == 1 {
            for j in 0..4 {
                tiles[cur + a_slot + j * 132] = ra[j];
            }
        } else {
            tiles.store_vec::<4>(cur + a_slot, ra);
        }
        if B_K == 1 {
            for j in 0..4 {
                tiles[cur + b_slot + j * 132] = rb[j];
            }
        } else {
            tiles.store_vec::<4>(cur + b_slot, rb);
        }
        // One barrier per slab publishes it. The stores above need none before them: their
        // buffer was last read by the multiply of slab t - 2, which every thread finished
        // before the previous pass's barrier.
        sync_threads();
        // The next slab into registers while this one is multiplied (past the last slab every
        // element is outside the matrix: zeros, and nothing is read).
        let gk = (t + 1) * 8;
        let ka = gk + a_kk;
        let kb = gk + b_kk;
        let fa = if A_K == 1 {
            a_row + ka
        } else {
            ka * lda + a_mn
        };
        let fb = if B_K == 1 {
            b_row + kb
        } else {
            kb * ldb + b_mn
        };
        // `load_run` written out, assigning `ra` and `rb` themselves: through the helper's
        // result ptxas keeps a second set of registers and copies them, eight moves a slab.
        for j in 0..4 {
            ra[j] = 0.0;
            rb[j] = 0.0;
        }
        if vec_a {
            if run_inside(A_K, 0, a_mn, ka, m, k) {
                let v = a.load_vec::<4>(fa);
                for j in 0..4 {
                    ra[j] = v[j];
                }
            }
        } else {
            for j in 0..4 {
                if run_inside(A_K, j, a_mn, ka, m, k) {
                    ra[j] = a[fa + j];
                }
            }
        }
        if vec_b {
            if run_inside(B_K, 0, b_mn, kb, n, k) {
                let v = b.load_vec::<4>(fb);
                for j in 0..4 {
                    rb[j] = v[j];
                }
            }
        } else {
            for j in 0..4 {
                if run_inside(B_K, j, b_mn, kb, n, k) {
                    rb[j] = b[fb + j];
                }
            }
        }
        for kk in 0..8 {
            let pa = cur + a_rel + kk * 132;
            let pb = cur + b_rel + kk * 132;
            let a_lo = tiles.load_vec::<4>(pa);
            let a_hi = tiles.load_vec::<4>(pa + 64);
            let b_lo = tiles.load_vec::<4>(pb);
            let b_hi = tiles.load_vec::<4>(pb + 64);
            let av = [
                a_lo[0], a_lo[1], a_lo[2], a_lo[3], a_hi[0], a_hi[1], a_hi[2], a_hi[3],
            ];
            let bv = [
                b_lo[0], b_lo[1], b_lo[2], b_lo[3], b_hi[0], b_hi[1], b_hi[2], b_hi[3],
            ];
            for i in 0..8 {
                for j in 0..8 {
                    acc[i * 8 + j] = av[i].mul_add(bv[j], acc[i * 8 + j]);
                }
            }
        }
    }

    // Each accumulator to its element, bounds-checked.
    let parts = epilogue_parts(flags);
    let row_lo = tile_m + ty * 4;
    let col_lo = tile_n + tx * 4;
    for i in 0..8 {
        let row = row_lo + (i / 4) * 64 + i % 4;
        if row < m {
            let row_off = row * ldc;
            for j in 0..8 {
                let col = col_lo + (j / 4) * 64 + j % 4;
                if col < n {
                    finish_f32(
                        c,
                        bias,
                        residual,
                        row_off + col,
                        col,
                        acc[i * 8 + j],
                        alpha,
                        beta,
                        parts,
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kernel_dsl::BlockContract;

    /// The host plans launches with `SIMT_THREADS`; the kernel refuses any other block.
    #[test]
    fn the_launch_plan_uses_the_kernels_block() {
        for k in super::GEMM_SIMT_INSTANCES {
            assert_eq!(
                k.meta.block,
                BlockContract::Exactly([super::SIMT_THREADS, 1, 1])
            );
        }
    }
}
