//! LayerNorm forward in `#[kernel]`: `y = (x − mean)·rstd·γ + β`, `rstd = 1/√(var + eps)`, with
//! the biased variance from a second pass over the centred values (held in registers where they
//! fit). The specializations are those of `rms_kernel`. The host keeps blocks within 512
//! threads, so the one-element instances may hold γ and β beside the row (72 registers). No
//! launch bound says so: `max_threads = 512` makes ptxas take 64 and spill.

use kernel_macros::kernel;

/// `x, y: rows × cols` (γ, β: `cols`).
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn layer_norm<T: Element, const W: u32, const CTA: u32>(
    x: &[T],
    gamma: &[T],
    beta: &[T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    eps: f32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    let cols_f = cols as f32;
    while row < rows {
        let base = row * cols;
        let mut held = [0.0f32; 16];
        let mut total = 0.0f32;
        // A held chunk's column is recomputed in each pass rather than kept: 16 more live
        // registers would cost the one-element instances a quarter of their occupancy.
        for h in 0..(16 / W) {
            let c = h * group + lane;
            let inside = c < chunks;
            // One element at a time, 16 guarded loads are too many for a predicate each
            // (ptxas then serializes them): read the row's last element instead, and zero it.
            let v = if W == 1 {
                x.load_vec::<W>(base + min(c * W, cols - 1))
            } else {
                x.load_vec_or::<W>(base + c * W, inside, 0.0 as T)
            };
            for k in 0..W {
                // Vector loads already read 0 outside the row; clamped ones are zeroed.
                held[h * W + k] = if W > 1 || inside { v[k] as f32 } else { 0.0 };
                total += held[h * W + k];
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let v = x.load_vec::<W>(base + c * W);
            for k in 0..W {
                total += v[k] as f32;
            }
            c += group;
        }
        // One element at a time, γ and β are read before the reductions, so that their loads
        // are in flight while the block sums rather than after.
        let mut gh = [0.0 as T; 16 / W];
        if W == 1 {
            for h in 0..16 {
                gh[h] = gamma[min(h * group + lane, cols - 1)];
            }
        }
        let mean = group_sum(total, lane, group) / cols_f;
        let mut sq = 0.0f32;
        for h in 0..(16 / W) {
            if h * group + lane < chunks {
                for k in 0..W {
                    let d = held[h * W + k] - mean;
                    sq = d.mul_add(d, sq);
                }
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let v = x.load_vec::<W>(base + c * W);
            for k in 0..W {
                let d = (v[k] as f32) - mean;
                sq = d.mul_add(d, sq);
            }
            c += group;
        }
        let mut bh = [0.0 as T; 16 / W];
        if W == 1 {
            for h in 0..16 {
                bh[h] = beta[min(h * group + lane, cols - 1)];
            }
        }
        let rstd = (group_sum(sq, lane, group) / cols_f + eps).rsqrt_rn();
        for h in 0..(16 / W) {
            let c = h * group + lane;
            if c < chunks {
                let mut out = if W == 1 {
                    [gh[h]; W]
                } else {
                    gamma.load_vec::<W>(c * W)
                };
                let b = if W == 1 {
                    [bh[h]; W]
                } else {
                    beta.load_vec::<W>(c * W)
                };
                for k in 0..W {
                    let n = (held[h * W + k] - mean) * rstd;
                    out[k] = n.mul_add(out[k] as f32, b[k] as f32) as T;
                }
                y.store_vec::<W>(base + c * W, out);
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let mut out = x.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            let b = beta.load_vec::<W>(c * W);
            for k in 0..W {
                let n = ((out[k] as f32) - mean) * rstd;
                out[k] = n.mul_add(gv[k] as f32, b[k] as f32) as T;
            }
            y.store_vec::<W>(base + c * W, out);
            c += group;
        }
        row += g[3];
    }
}
