//! The fused gate and up projections for up to 16 rows of `x`: one pass over `x` feeds two
//! NF4 weights of the same shape, a warp per output column of both, each lane a code word of
//! each weight (8 weights) a step, which keeps 32 sums and 16 weights in registers; optionally `silu(gate) ⊙ up`.

use kernel_macros::kernel;

/// Threads per block: 8 warps, a column of both outputs each.
pub(crate) const THREADS: u32 = 256;
/// Output columns per block.
pub(crate) const COLS_PER_BLOCK: u32 = 8;

/// For `i < m ≤ 16`, `j < n`: `g = Σ_p x[i, p]·G[j, p]`, `u = Σ_p x[i, p]·U[j, p]`. `ACT = 0`
/// writes `y[i·n + j] = g` and `y[m·n + i·n + j] = u`; `ACT = 1` writes `y[i·n + j] =
/// silu(g)·u`. G and U are NF4 with f32 absmax (`ga`, `ua`), `n × k`, `k` a multiple of 64.
/// Grid: `ceil(n / 8)` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(T in [f32, bf16], ACT in [0, 1]))]
pub fn nf4_gate_up<T: Element, const ACT: u32>(
    x: &[T],
    gcodes: &[u32],
    ga: &[f32],
    ucodes: &[u32],
    ua: &[f32],
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
        let mut accg = [0.0f32; 16];
        let mut accu = [0.0f32; 16];
        let mut w0 = lane;
        while w0 < row_words {
            let gw = row * row_words + w0;
            let qg = gcodes[gw];
            let qu = ucodes[gw];
            let sg = ga[gw >> 3];
            let su = ua[gw >> 3];
            let mut wg = [0.0f32; 8];
            let mut wu = [0.0f32; 8];
            for e in 0..8 {
                wg[e] = table[word_code(qg, e)];
                wu[e] = table[word_code(qu, e)];
            }
            let kk = w0 * 8;
            for i in 0..16 {
                if i < m {
                    let mut dg = 0.0f32;
                    let mut du = 0.0f32;
                    for h in 0..(8 / T::VEC) {
                        let xv = x.load_vec::<{ T::VEC }>(i * k + kk + h * T::VEC);
                        for e in 0..T::VEC {
                            let xe = xv[e] as f32;
                            dg = fma(xe, wg[h * T::VEC + e], dg);
                            du = fma(xe, wu[h * T::VEC + e], du);
                        }
                    }
                    accg[i] = fma(dg, sg, accg[i]);
                    accu[i] = fma(du, su, accu[i]);
                }
            }
            w0 += 32;
        }
        for i in 0..16 {
            if i < m {
                let mut g = accg[i];
                let mut u = accu[i];
                for d in [16, 8, 4, 2, 1] {
                    g += shfl_xor(g, d);
                    u += shfl_xor(u, d);
                }
                if lane == 0 {
                    if ACT == 1 {
                        y[i * n + row] = (g / (1.0 + exp(-g)) * u) as T;
                    } else {
                        y[i * n + row] = g as T;
                        y[m * n + i * n + row] = u as T;
                    }
                }
            }
        }
    }
}
