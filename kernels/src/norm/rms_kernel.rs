//! RMSNorm forward in `#[kernel]`: `y = x · rstd · γ` with `rstd = 1/√(mean(x²) + eps)`.
//!
//! One source holds every specialization: element type `T`, access width `W` (one element, or
//! 16 bytes when every row starts aligned) and the row group (`CTA = 0`: a warp per row;
//! `CTA = 1`: a block per row, with a barrier only that instance has). Each thread keeps its
//! first `HELD` elements of the row in registers between the reduction and the write; wider
//! rows read the rest again.

use kernel_macros::{device, kernel};

/// Butterfly sum over the warp: every lane ends with the total.
#[device(crate = crate::lang)]
pub(crate) fn warp_sum(v: f32) -> f32 {
    let mut s = v;
    s += shfl_xor(s, 16);
    s += shfl_xor(s, 8);
    s += shfl_xor(s, 4);
    s += shfl_xor(s, 2);
    s += shfl_xor(s, 1);
    s
}

/// `x, gamma, y: rows × cols` (γ: `cols`). Launch: warp-per-row instances take any block of
/// whole warps; block-per-row instances take up to 1024 threads, one row per block, so every
/// instance must stay within 64 registers (`tests/norm_ptxas.rs` checks it). No launch bound
/// says so: `maxnreg = 64` lets ptxas take 40 to 56 and halves occupancy, and
/// `max_threads = 1024` trims them to 32 with spills (measured in BENCHMARKS.md).
#[kernel(crate = crate::lang,
         instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn rms_norm<T: Dtype, const W: u32, const CTA: u32>(
    x: &[T],
    gamma: &[T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    eps: f32,
) {
    let t = thread_idx().x;
    let lane = if CTA == 1 { t } else { t % 32 };
    let group = if CTA == 1 { block_dim().x } else { 32 };
    let groups = if CTA == 1 { 1 } else { block_dim().x / 32 };
    let mut row = block_idx().x * groups + if CTA == 1 { 0 } else { t / 32 };
    let chunks = cols / W;
    let cols_f = cols as f32;
    while row < rows {
        let base = row * cols;
        // Held: chunk `lane + h·group` for h < 16 / W, so 16 elements per thread.
        let mut held = [0.0f32; 16];
        let mut ss = 0.0f32;
        for h in 0..(16 / W) {
            let c = h * group + lane;
            let v = x.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T);
            for k in 0..W {
                held[h * W + k] = v[k] as f32;
                ss = held[h * W + k].mul_add(held[h * W + k], ss);
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let v = x.load_vec::<W>(base + c * W);
            for k in 0..W {
                let f = v[k] as f32;
                ss = f.mul_add(f, ss);
            }
            c += group;
        }
        ss = warp_sum(ss);
        if CTA == 1 {
            let partial = shared_array::<f32, 32>();
            if lane % 32 == 0 {
                partial[lane / 32] = ss;
            }
            sync_threads();
            let w = lane % 32;
            ss = warp_sum(if w < group / 32 { partial[w] } else { 0.0 });
            // The next row writes `partial` again.
            sync_threads();
        }
        let rstd = (ss / cols_f + eps).sqrt().recip();
        for h in 0..(16 / W) {
            let c = h * group + lane;
            if c < chunks {
                let mut out = gamma.load_vec::<W>(c * W);
                for k in 0..W {
                    out[k] = (held[h * W + k] * rstd * (out[k] as f32)) as T;
                }
                y.store_vec::<W>(base + c * W, out);
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let mut out = x.load_vec::<W>(base + c * W);
            let g = gamma.load_vec::<W>(c * W);
            for k in 0..W {
                out[k] = ((out[k] as f32) * rstd * (g[k] as f32)) as T;
            }
            y.store_vec::<W>(base + c * W, out);
            c += group;
        }
        row += if CTA == 1 {
            grid_dim().x
        } else {
            grid_dim().x * groups
        };
    }
}
