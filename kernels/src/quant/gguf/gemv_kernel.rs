//! Decode GEMV `y = x·Wᵀ` over a GGUF weight in `#[kernel]`, for up to `MT` rows of `x`: a
//! warp per output row, each lane decoding one chunk of 32 weights at a time (a warp covers
//! 32 consecutive chunks, so its loads of a pass are one contiguous stretch of the row) and
//! applying it to every row of `x` before the next, so each weight byte is read once. f32
//! accumulation in a fixed order, then a butterfly over the warp: reruns give the same bits.
//!
//! `NORM = 1` is the first projection of a block, `y = rmsnorm(x)·Wᵀ` with the norm weight
//! `gamma`: the lanes sum `x²` over the same pass and `y = (Σ x·(γ·w)) / sqrt(mean(x²) + eps)`,
//! so the normalized `x` is never written.

use kernel_macros::kernel;

/// Output rows per block (a warp each). At least four blocks an SM (128 registers), so that
/// enough warps stay resident to keep weight loads in flight.
pub(crate) const GEMV_ROWS_PER_BLOCK: u32 = 4;

/// `w`: `n` rows of `row_bytes` bytes of format `F`; `x`: `m × k`; `gamma`: `k` (read only
/// where `NORM = 1`); `y`: `m × n`; `m ≤ MT`.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], F in [0, 1, 2], MT in [1, 4, 16], NORM in [0, 1]),
    block = 128,
    min_blocks = 4
)]
pub fn gguf_gemv<T: Dtype, const F: u32, const MT: u32, const NORM: u32>(
    w: &[u32],
    x: &[T],
    gamma: &[T],
    y: &mut [T],
    m: u32,
    n: u32,
    k: u32,
    row_bytes: u32,
    eps: f32,
) {
    let lane = lane_id();
    let row = block_idx().x * 4 + thread_idx().x / 32;
    if row < n {
        let chunks = k / 32;
        let base = row * row_bytes;
        let mut acc = [0.0f32; MT];
        let mut sq = [0.0f32; MT];
        let mut c = lane;
        while c < chunks {
            let at = chunk_at(c);
            let mut wv = decode_chunk(w, base + at[0], at[1]);
            let first = chunk_first(c);
            // Runs of `rl` consecutive elements; a vector never straddles two.
            let rl = 32u32 >> F;
            if NORM == 1 {
                // γ goes into the weights once, for every row of x.
                for j in 0..(32 / T::VEC) {
                    let at = j * T::VEC;
                    let gv = gamma.load_vec::<{ T::VEC }>(first + 32 * (at / rl) + at % rl);
                    for e in 0..T::VEC {
                        wv[j * T::VEC + e] = wv[j * T::VEC + e] * (gv[e] as f32);
                    }
                }
            }
            for i in 0..MT {
                if i < m {
                    let xr = i * k + first;
                    let mut s = acc[i];
                    let mut q = sq[i];
                    for j in 0..(32 / T::VEC) {
                        let at = j * T::VEC;
                        let xv = x.load_vec::<{ T::VEC }>(xr + 32 * (at / rl) + at % rl);
                        for e in 0..T::VEC {
                            let xf = xv[e] as f32;
                            if NORM == 1 {
                                q = fma(xf, xf, q);
                            }
                            s = fma(xf, wv[j * T::VEC + e], s);
                        }
                    }
                    acc[i] = s;
                    sq[i] = q;
                }
            }
            c += 32;
        }
        for i in 0..MT {
            let mut s = acc[i];
            let mut q = sq[i];
            for d in [16, 8, 4, 2, 1] {
                s += shfl_xor(s, d);
                if NORM == 1 {
                    q += shfl_xor(q, d);
                }
            }
            if lane == 0 && i < m {
                let mut v = s;
                if NORM == 1 {
                    v = s * rsqrt_rn(q / (k as f32) + eps);
                }
                y[i * n + row] = v as T;
            }
        }
    }
}
