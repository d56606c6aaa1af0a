//! Decode GEMV `y = x·Wᵀ` over a GGUF weight in `#[kernel]`, for up to `MT` rows of `x`: a
//! warp per output row, each lane decoding chunks of 32 weights (a warp covers 32 consecutive
//! chunks, so its loads of a pass are one contiguous stretch of the row) and applying each to
//! every row of `x` before the next, so each weight byte is read once. A lane loads the words
//! of `U` chunks before decoding the first. The dot products go through the codes and each
//! run's scale and offset (`dot.rs`) rather than dequantized weights: at one row of `x` the
//! kernel is bound by its instructions per weight. f32 accumulation in a fixed order, then a
//! butterfly over the warp: reruns give the same bits.
//!
//! `NORM = 1` is the first projection of a block, `y = rmsnorm(x)·Wᵀ` with the norm weight
//! `gamma`: the lanes sum `x²` over the same pass and `y = (Σ (γ·x)·w) / sqrt(mean(x²) + eps)`,
//! so the normalized `x` is never written.

use kernel_macros::kernel;

/// Output rows per block (a warp each). At least four blocks an SM (128 registers), so that
/// enough warps stay resident to keep weight loads in flight.
pub(crate) const GEMV_ROWS_PER_BLOCK: u32 = 4;

/// `w`: `n` rows of `row_bytes` bytes of format `F`; `x`: `m × k`; `gamma`: `k` (read only
/// where `NORM = 1`); `y`: `m × n`; `m ≤ MT`.
#[kernel(
    crate = crate::lang,
    instances(
        T in [f32, bf16],
        F in [0, 1, 2],
        MT in [1, 4, 16],
        NORM in [0, 1],
        U in [if MT == 1 { 4 } else if MT == 4 { 2 } else { 1 }]
    ),
    block = 128,
    min_blocks = 4
)]
pub fn gguf_gemv<T: Element, const F: u32, const MT: u32, const NORM: u32, const U: u32>(
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
        let mut c0 = lane;
        while c0 < chunks {
            // Every load of the U chunks first; past the row's end, a lane reloads its last
            // chunk (in cache) and skips it below, so that no load is predicated.
            let mut raw = [0u32; 13 * U];
            for u in 0..U {
                let c = min(c0 + 32 * u, chunks - 1);
                let at = chunk_at(c);
                let v = load_chunk(w, base + at[0], at[1]);
                for j in 0..13 {
                    raw[13 * u + j] = v[j];
                }
            }
            if c0 == lane {
                // Where the launch lets this kernel start while the one before it finishes
                // (sm_90+), it waits here until that one is done: after the first weight
                // loads, since no kernel writes a weight (`GgufWeights` is filled by its
                // upload only), before any other access.
                griddep_wait();
            }
            for u in 0..U {
                let c = c0 + 32 * u;
                if c < chunks {
                    let at = chunk_at(c);
                    let mut v = [0u32; 13];
                    for j in 0..13 {
                        v[j] = raw[13 * u + j];
                    }
                    let f = chunk_codes(v, base + at[0], at[1]);
                    let ac = chunk_coefficients(v, base + at[0], at[1]);
                    let first = chunk_first(c);
                    // Runs of `32 >> F` consecutive elements, run `r` at `32·r` past the
                    // first; a vector never straddles two.
                    for i in 0..MT {
                        if i < m {
                            let xr = i * k + first;
                            let mut total = acc[i];
                            let mut q = sq[i];
                            for r in 0..(1u32 << F) {
                                let mut sf = 0.0f32;
                                let mut sx = 0.0f32;
                                for j in 0..((32u32 >> F) / T::VEC) {
                                    let at = xr + 32 * r + j * T::VEC;
                                    let xv = x.load_vec::<{ T::VEC }>(at);
                                    let mut xf = [0.0f32; T::VEC];
                                    for e in 0..T::VEC {
                                        xf[e] = xv[e] as f32;
                                    }
                                    if NORM == 1 {
                                        let gv = gamma.load_vec::<{ T::VEC }>(at - i * k);
                                        for e in 0..T::VEC {
                                            q = fma(xf[e], xf[e], q);
                                            xf[e] = xf[e] * (gv[e] as f32);
                                        }
                                    }
                                    for e in 0..T::VEC {
                                        sf = fma(xf[e], f[r * (32u32 >> F) + j * T::VEC + e], sf);
                                        sx += xf[e];
                                    }
                                }
                                total = fma(ac[2 * r], sf, fma(ac[2 * r + 1], sx, total));
                            }
                            acc[i] = total;
                            sq[i] = q;
                        }
                    }
                }
            }
            c0 += 32 * U;
        }
        // Every weight is loaded: the next kernel's blocks may be placed while this block
        // reduces and stores (releasing at the top crowded them onto the SMs with room).
        griddep_launch_dependents();
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
