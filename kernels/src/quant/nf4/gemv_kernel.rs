//! `y = x·Wᵀ` for up to 16 rows of `x`, the dequantization fused: a warp per output column
//! (row of W), each lane 16 bytes of codes (32 weights, one block's) a step, every row of `x`
//! applied to each decoded weight before the next step. A lane loads the codes and scales of
//! `U` steps before decoding the first: at one row of `x` the kernel is bound by how many
//! weight bytes are in flight, not by the decode.

use kernel_macros::kernel;

/// Threads per block: 8 warps, a row of W each; two blocks an SM (128 registers), which also
/// keeps ptxas from spilling the sixteen-row f32 instance when it is given no bound.
pub(crate) const THREADS: u32 = 256;
/// Rows of W per block.
pub(crate) const ROWS_PER_BLOCK: u32 = 8;
/// The most rows of `x` one launch applies.
pub(crate) const MAX_M: usize = 16;

/// The instance for `m` rows of `x`: the fewest accumulators that hold them.
pub(crate) fn rows_instance(m: usize) -> u32 {
    match m {
        1 => 1,
        2..=4 => 4,
        _ => 16,
    }
}

/// `y[i, j] = Σ_p x[i, p] · W[j, p]` for `i < m ≤ MT`, `j < n`, W `n × k` in NF4 (`k` a
/// multiple of 64). Grid: `ceil(n / 8)` blocks of 256.
#[kernel(
    crate = crate::lang,
    block = 256,
    min_blocks = 2,
    instances(
        T in [f32, bf16],
        MT in [1, 4, 16],
        U in [if MT == 1 { 4 } else if MT == 4 { 2 } else { 1 }]
    )
)]
pub fn nf4_gemv<T: Element, const MT: u32, const U: u32>(
    x: &[T],
    codes: &[u32],
    absmax: &[f32],
    qabs: &[u32],
    code2: &[f32],
    scale2: &[f32],
    offset: f32,
    double: u32,
    y: &mut [T],
    m: u32,
    n: u32,
    k: u32,
) {
    let table = shared_array::<f32, 16>();
    let tid = thread_idx().x;
    if tid < 16 {
        table[tid] = nf4_value(tid);
    }
    sync_threads();
    let lane = lane_id();
    let row = block_idx().x * 8 + (tid >> 5);
    if row < n {
        let row_words = k >> 3;
        let mut acc = [0.0f32; MT];
        let mut w0 = lane * 4;
        while w0 < row_words {
            // Every load of the U steps first; past the row's end, a lane reloads its last
            // step (in cache) and skips it below, so that no load is predicated.
            let mut q = [0u32; 4 * U];
            let mut a = [0.0f32; U];
            for u in 0..U {
                let gw = row * row_words + min(w0 + 128 * u, row_words - 4);
                let v = codes.load_vec::<4>(gw);
                for j in 0..4 {
                    q[4 * u + j] = v[j];
                }
                a[u] = block_absmax(absmax, qabs, code2, scale2, offset, double, gw >> 3);
            }
            for u in 0..U {
                let ww = w0 + 128 * u;
                if ww < row_words {
                    let mut wv = [0.0f32; 32];
                    for j in 0..4 {
                        for e in 0..8 {
                            wv[j * 8 + e] = table[word_code(q[4 * u + j], e)];
                        }
                    }
                    let kk = ww * 8;
                    for i in 0..MT {
                        if i < m {
                            let mut s = 0.0f32;
                            for h in 0..(32 / T::VEC) {
                                let xv = x.load_vec::<{ T::VEC }>(i * k + kk + h * T::VEC);
                                for e in 0..T::VEC {
                                    s = fma(xv[e] as f32, wv[h * T::VEC + e], s);
                                }
                            }
                            acc[i] = fma(s, a[u], acc[i]);
                        }
                    }
                }
            }
            w0 += 128 * U;
        }
        for i in 0..MT {
            if i < m {
                let mut s = acc[i];
                for d in [16, 8, 4, 2, 1] {
                    s += shfl_xor(s, d);
                }
                if lane == 0 {
                    y[i * n + row] = s as T;
                }
            }
        }
    }
}
