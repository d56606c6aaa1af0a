//! LayerNorm backward in `#[kernel]`. With `x̂ = (x − mean)·rstd` and `g = γ·dy`:
//! `dx = rstd·(g − mean(g) − x̂·mean(g·x̂))`; the γ and β gradients `Σ_rows dy·x̂` and
//! `Σ_rows dy` go to two `blocks × cols` workspace blocks (γ first), one row per block.
//!
//! Every statistic comes from one reduction of four sums over `d = x − x₀` (the row's first
//! element): `Σ d`, `Σ d²`, `Σ g`, `Σ g·d`, giving `mean = x₀ + Σd/n`, `var = Σd²/n − (Σd/n)²`
//! and `Σ g·x̂ = rstd·(Σ g·d − (Σd/n)·Σ g)`. Shifting by an element of the row keeps the
//! variance's cancellation small even where the mean is far from zero. The row loop, the held
//! chunks and the staging of the next two rows are those of `rms_backward_kernel`.

use kernel_macros::kernel;

/// `x, dy, dx: rows × cols`, γ: `cols`, `partial`: a `2 × blocks × cols` f32 workspace.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], W in [1, T::VEC]),
    maxnreg = 64
)]
pub fn layer_norm_backward<T: Element, const W: u32>(
    x: &[T],
    gamma: &[T],
    dy: &[T],
    dx: &mut [T],
    partial: &mut [f32],
    rows: u32,
    cols: u32,
    eps: f32,
) {
    let t = thread_idx().x;
    let threads = block_dim().x;
    let step = grid_dim().x;
    let chunks = cols / W;
    let last = chunks - 1;
    let inv_n = (cols as f32).rcp_rn();
    let gbase = block_idx().x * cols;
    let bbase = step * cols + gbase;
    let first = (8 / W) * threads + t;
    // The columns past the held ones keep their gradients in the workspace rows.
    let mut c = first;
    while c < chunks {
        for k in 0..W {
            partial[gbase + c * W + k] = 0.0;
            partial[bbase + c * W + k] = 0.0;
        }
        c += threads;
    }
    let mut dgamma = [0.0f32; 8];
    let mut dbeta = [0.0f32; 8];
    let mut row = block_idx().x;
    // The bf16 16-byte instances stage the held chunks of x and dy of the next two rows in
    // shared memory through cp.async while the current row is reduced and written: twice the
    // bytes in flight of one row loaded ahead into registers, and in no registers. Two slots
    // of `[x, dy]`, each 4096 elements (512 threads × 8), then two slots of each warp's copy
    // of the row's first 16 bytes, whose first element is the shift: staged with the row, it
    // costs no wait of its own (a register carried from row to row would be waited for where
    // the next row's value is moved into it). One element in the other instances.
    let stage = shared_array::<T, { 1 + (W / 8) * (16383 + 256) }>();
    let head = 16384 + (t / 32) * 8;
    let mut trip = 0u32;
    if W > 1 && T::VEC == 8 {
        let at = min(t, last) * 8;
        for k in 0..2 {
            let r = row + k * step;
            if r < rows {
                cp_async_16(stage, k * 8192 + t * 8, x, r * cols + at);
                cp_async_16(stage, k * 8192 + 4096 + t * 8, dy, r * cols + at);
                if lane_id() == 0 {
                    cp_async_16(stage, head + k * 128, x, r * cols);
                }
            }
            cp_async_commit();
        }
    }
    while row < rows {
        let base = row * cols;
        // This row's held chunks, as loaded, and its first element.
        let mut xh = [0.0 as T; 8];
        let mut dh = [0.0 as T; 8];
        let mut shift = 0.0f32;
        let slot = (trip % 2) * 8192 + t * 8;
        if W > 1 && T::VEC == 8 {
            // This row's copies are the older of the two groups in flight.
            cp_async_wait(1);
            let xv = stage.load_vec::<W>(slot);
            let dv = stage.load_vec::<W>(slot + 4096);
            for k in 0..W {
                xh[k] = xv[k];
                dh[k] = dv[k];
            }
            // Only lane 0 waited for its warp's copy of the row's head.
            let mut first = 0.0f32;
            if lane_id() == 0 {
                first = stage[head + (trip % 2) * 128] as f32;
            }
            shift = shfl_idx(first, 0);
        } else {
            for h in 0..(8 / W) {
                let c = h * threads + t;
                // As in `rms_backward_kernel`: one element at a time, clamped loads rather than
                // 16 predicates.
                let i = if W == 1 {
                    base + min(c, last)
                } else {
                    base + c * W
                };
                let xv = x.load_vec_or::<W>(i, W == 1 || c < chunks, 0.0 as T);
                let dv = dy.load_vec_or::<W>(i, W == 1 || c < chunks, 0.0 as T);
                for k in 0..W {
                    xh[h * W + k] = xv[k];
                    dh[h * W + k] = dv[k];
                }
            }
            shift = x[base] as f32;
        }

        // Σ d, Σ d², Σ g and Σ g·d, with d = x − shift and g = γ·dy. Chunks outside the row
        // would add d = −shift: they are left out.
        let mut s = [0.0f32; 4];
        for h in 0..(8 / W) {
            let c = h * threads + t;
            let gv = gamma.load_vec::<W>(min(c, last) * W);
            if W == 1 {
                let d = if c < chunks {
                    (xh[h] as f32) - shift
                } else {
                    0.0
                };
                let g = if c < chunks {
                    (gv[0] as f32) * (dh[h] as f32)
                } else {
                    0.0
                };
                s[0] += d;
                s[1] = d.mul_add(d, s[1]);
                s[2] += g;
                s[3] = g.mul_add(d, s[3]);
            } else if c < chunks {
                for k in 0..W {
                    let d = (xh[h * W + k] as f32) - shift;
                    let g = (gv[k] as f32) * (dh[h * W + k] as f32);
                    s[0] += d;
                    s[1] = d.mul_add(d, s[1]);
                    s[2] += g;
                    s[3] = g.mul_add(d, s[3]);
                }
            }
        }
        if W > 1 && T::VEC == 8 {
            // The slot is free once the sums above have read it: it takes the row two ahead.
            let r = row + 2 * step;
            if r < rows {
                let at = r * cols + min(t, last) * 8;
                cp_async_16(stage, slot, x, at);
                cp_async_16(stage, slot + 4096, dy, at);
                if lane_id() == 0 {
                    cp_async_16(stage, head + (trip % 2) * 128, x, r * cols);
                }
            }
            cp_async_commit();
        }
        let mut c = first;
        while c < chunks {
            let xv = x.load_vec::<W>(base + c * W);
            let dv = dy.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            for k in 0..W {
                let d = (xv[k] as f32) - shift;
                let g = (gv[k] as f32) * (dv[k] as f32);
                s[0] += d;
                s[1] = d.mul_add(d, s[1]);
                s[2] += g;
                s[3] = g.mul_add(d, s[3]);
            }
            c += threads;
        }
        let sums = block_sums4(s, t, threads);

        // dx = rstd·g + c1·d + c0 and x̂ = rstd·d + xh0, whose products with dy are the γ
        // gradient's terms (dy alone is β's).
        let mean_d = sums[0] * inv_n;
        // Rounding can take a constant row's variance just below zero.
        let var = max(sums[1] * inv_n - mean_d * mean_d, 0.0);
        let rstd = (var + eps).rsqrt_rn();
        let mean_g = sums[2] * inv_n;
        let mean_gx = (sums[3] - mean_d * sums[2]) * rstd * inv_n;
        let c1 = -(rstd * rstd * mean_gx);
        let c0 = -(rstd * mean_g + c1 * mean_d);
        let xh0 = -(rstd * mean_d);

        for h in 0..(8 / W) {
            let c = h * threads + t;
            let gv = gamma.load_vec::<W>(min(c, last) * W);
            let mut out = [0.0 as T; W];
            for k in 0..W {
                let d = (xh[h * W + k] as f32) - shift;
                let dv = dh[h * W + k] as f32;
                out[k] = rstd.mul_add((gv[k] as f32) * dv, c1.mul_add(d, c0)) as T;
                // Chunks outside the row add to gradients that are never stored.
                dgamma[h * W + k] = dv.mul_add(d.mul_add(rstd, xh0), dgamma[h * W + k]);
                dbeta[h * W + k] += dv;
            }
            if c < chunks {
                dx.store_vec::<W>(base + c * W, out);
            }
        }
        let mut c = first;
        while c < chunks {
            let xv = x.load_vec::<W>(base + c * W);
            let dv = dy.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            let mut out = [0.0 as T; W];
            for k in 0..W {
                let d = (xv[k] as f32) - shift;
                out[k] = rstd.mul_add((gv[k] as f32) * (dv[k] as f32), c1.mul_add(d, c0)) as T;
            }
            dx.store_vec::<W>(base + c * W, out);
            // The γ partials, then the β partials, four at a time: all at once would hold
            // sixteen more registers, which the whole kernel would then need.
            let pg = gbase + c * W;
            let pb = bbase + c * W;
            if W == 1 {
                let e = dv[0] as f32;
                partial[pg] = e.mul_add(((xv[0] as f32) - shift).mul_add(rstd, xh0), partial[pg]);
                partial[pb] += e;
            } else {
                for q in 0..(W / 4) {
                    let mut u = partial.load_vec::<4>(pg + q * 4);
                    for k in 0..4 {
                        let d = (xv[q * 4 + k] as f32) - shift;
                        u[k] = (dv[q * 4 + k] as f32).mul_add(d.mul_add(rstd, xh0), u[k]);
                    }
                    partial.store_vec::<4>(pg + q * 4, u);
                }
                for q in 0..(W / 4) {
                    let mut u = partial.load_vec::<4>(pb + q * 4);
                    for k in 0..4 {
                        u[k] += dv[q * 4 + k] as f32;
                    }
                    partial.store_vec::<4>(pb + q * 4, u);
                }
            }
            c += threads;
        }
        row += step;
        trip += 1;
    }
    if W > 1 && T::VEC == 8 {
        cp_async_wait(0);
    }

    for h in 0..(8 / W) {
        let c = h * threads + t;
        if c < chunks {
            let pg = gbase + c * W;
            let pb = bbase + c * W;
            if W == 1 {
                partial[pg] = dgamma[h];
                partial[pb] = dbeta[h];
            } else {
                for q in 0..(W / 4) {
                    let i = h * W + q * 4;
                    let at = q * 4;
                    partial.store_vec::<4>(
                        pg + at,
                        [dgamma[i], dgamma[i + 1], dgamma[i + 2], dgamma[i + 3]],
                    );
                    partial.store_vec::<4>(
                        pb + at,
                        [dbeta[i], dbeta[i + 1], dbeta[i + 2], dbeta[i + 3]],
                    );
                }
            }
        }
    }
}
