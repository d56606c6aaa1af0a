//! RMSNorm backward in `#[kernel]`. With `rstd = 1/√(mean(x²) + eps)`:
//! `dx_j = rstd·γ_j·dy_j − x_j·rstd³/n · Σ_i dy_i·γ_i·x_i`, and the γ gradient
//! `Σ_rows dy_j·x_j·rstd`, which each block accumulates for its rows into its own row of the f32
//! workspace (`partial`); `column_sum` then adds those rows in a fixed order.
//!
//! A block owns rows `block, block + blocks, …`, one at a time. Each thread holds 8 elements of
//! a row's x and dy (chunks `t + h·threads`), as loaded, between the reduction and the write,
//! and the γ gradient of those columns for the whole loop; wider rows read the rest again and
//! keep its gradient in the workspace. With 16-bit elements in 16-byte chunks
//! (`W > 1 && T::VEC == 8`, one chunk a thread) the next row's x and dy are loaded into
//! registers while the current one is reduced and written; the other instances issue a
//! row's loads together at its top. Two 512-thread blocks share an SM, one's
//! reduction hiding the other's loads, hence the cap of 64 registers.

use kernel_macros::{device, kernel};

/// The eight values of a 16-byte bf16 chunk held as its four words: element `2j` is the low
/// half of word `j`, widened by a shift, and `2j + 1` the high half, by a mask.
#[device(crate = crate::lang)]
fn bf16_halves(w: [u32; 4]) -> [f32; 8] {
    let mut f = [0.0f32; 8];
    for j in 0..4 {
        f[2 * j] = from_bits(w[j] << 16);
        f[2 * j + 1] = from_bits(w[j] & 0xffff_0000);
    }
    f
}

/// A thread's eight held values of x or dy as f32: from the words of the prefetching instances
/// (`W > 1 && T::VEC == 8`), else from the elements.
#[device(crate = crate::lang)]
fn held_f32<T, const W: u32>(elems: [T; 8], words: [u32; 4]) -> [f32; 8] {
    let mut f = [0.0f32; 8];
    if W > 1 && T::VEC == 8 {
        let h = bf16_halves(words);
        for i in 0..8 {
            f[i] = h[i];
        }
    } else {
        for i in 0..8 {
            f[i] = elems[i] as f32;
        }
    }
    f
}

/// γ's `W` columns from `i` as f32 (the first `W` of eight), read from L1 where they are
/// used: every block reads the same γ, and holding it across the row loop would cost
/// registers that the second block of an SM needs.
#[device(crate = crate::lang)]
fn gamma_f32<T, const W: u32>(gamma: &[T], i: u32) -> [f32; 8] {
    let mut f = [0.0f32; 8];
    if W > 1 && T::VEC == 8 {
        let h = bf16_halves(gamma.load_words::<4>(i));
        for k in 0..8 {
            f[k] = h[k];
        }
    } else {
        let g = gamma.load_vec::<W>(i);
        for k in 0..W {
            f[k] = g[k] as f32;
        }
    }
    f
}

/// `x, dy, dx: rows × cols`, γ: `cols`, `partial`: a `blocks × cols` f32 workspace.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], W in [1, T::VEC]),
    maxnreg = 64
)]
pub fn rms_norm_backward<T: Element, const W: u32>(
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
    let pbase = block_idx().x * cols;
    let first = (8 / W) * threads + t;
    // The columns past the held ones keep their gradient in the workspace row.
    let mut c = first;
    while c < chunks {
        for k in 0..W {
            partial[pbase + c * W + k] = 0.0;
        }
        c += threads;
    }
    let mut grad = [0.0f32; 8];
    let mut row = block_idx().x;
    // The bf16 16-byte instances load the next row's held chunks of x and dy while the
    // current row is reduced and written, straight into the registers that carry them to the
    // next iteration (a predicated load leaves them as they were past the last row), so no
    // copy waits on the loads before the block reduction's barrier.
    let at = min(t, last) * 8;
    let mut next_x = [0u32; 4];
    let mut next_dy = [0u32; 4];
    let mut trip = 0u32;
    if W > 1 && T::VEC == 8 {
        if row < rows {
            next_x = x.load_words::<4>(row * cols + at);
            next_dy = dy.load_words::<4>(row * cols + at);
        }
    }
    while row < rows {
        let base = row * cols;
        // This row's held chunks, as loaded.
        let mut xh = [0.0 as T; 8];
        let mut dh = [0.0 as T; 8];
        // The prefetching instances hold their chunk as the loaded words, widened where used.
        let xw = next_x;
        let dw = next_dy;
        if W > 1 && T::VEC == 8 {
            let r = row + step;
            if r < rows {
                next_x = x.load_words::<4>(r * cols + at);
                next_dy = dy.load_words::<4>(r * cols + at);
            }
        } else {
            for h in 0..(8 / W) {
                let c = h * threads + t;
                let i = if W == 1 {
                    // 16 guarded loads would take a predicate each (ptxas then serializes
                    // them): past the row's end they read its last element, which the sums
                    // leave out.
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
        }

        let mut ss = 0.0f32;
        let mut dot = 0.0f32;
        let xs = held_f32::<T, W>(xh, xw);
        let ds = held_f32::<T, W>(dh, dw);
        for h in 0..(8 / W) {
            let c = h * threads + t;
            let gf = gamma_f32::<T, W>(gamma, min(c, last) * W);
            for k in 0..W {
                // Guarded vector loads read 0 outside the row; clamped or prefetched ones are
                // zeroed.
                let xv = if (W > 1 && T::VEC != 8) || c < chunks {
                    xs[h * W + k]
                } else {
                    0.0
                };
                ss = xv.mul_add(xv, ss);
                dot = (ds[h * W + k] * gf[k]).mul_add(xv, dot);
            }
        }
        let mut c = first;
        while c < chunks {
            let xv = x.load_vec::<W>(base + c * W);
            let dv = dy.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            for k in 0..W {
                let f = xv[k] as f32;
                ss = f.mul_add(f, ss);
                dot = ((dv[k] as f32) * (gv[k] as f32)).mul_add(f, dot);
            }
            c += threads;
        }
        let sums = block_sums2([ss, dot], t, threads, trip);
        let rstd = (sums[0] * inv_n + eps).rsqrt_rn();
        let neg_coef = -(sums[1] * (rstd * rstd * rstd) * inv_n);

        let xs = held_f32::<T, W>(xh, xw);
        let ds = held_f32::<T, W>(dh, dw);
        for h in 0..(8 / W) {
            let c = h * threads + t;
            let gf = gamma_f32::<T, W>(gamma, min(c, last) * W);
            let mut out = [0.0 as T; W];
            for k in 0..W {
                let (xv, dv) = (xs[h * W + k], ds[h * W + k]);
                out[k] = (gf[k] * dv).mul_add(rstd, xv * neg_coef) as T;
                // Chunks outside the row add to gradients that are never stored.
                grad[h * W + k] = dv.mul_add(xv * rstd, grad[h * W + k]);
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
                let f = xv[k] as f32;
                out[k] = ((gv[k] as f32) * (dv[k] as f32)).mul_add(rstd, f * neg_coef) as T;
            }
            dx.store_vec::<W>(base + c * W, out);
            // The partials four at a time (see `layer_backward_kernel`).
            let p = pbase + c * W;
            if W == 1 {
                partial[p] = (dv[0] as f32).mul_add((xv[0] as f32) * rstd, partial[p]);
            } else {
                for q in 0..(W / 4) {
                    let mut u = partial.load_vec::<4>(p + q * 4);
                    for k in 0..4 {
                        let f = xv[q * 4 + k] as f32;
                        u[k] = (dv[q * 4 + k] as f32).mul_add(f * rstd, u[k]);
                    }
                    partial.store_vec::<4>(p + q * 4, u);
                }
            }
            c += threads;
        }
        row += step;
        trip += 1;
    }
    for h in 0..(8 / W) {
        let c = h * threads + t;
        if c < chunks {
            let p = pbase + c * W;
            if W == 1 {
                partial[p] = grad[h];
            } else {
                for q in 0..(W / 4) {
                    let g = h * W + q * 4;
                    partial.store_vec::<4>(
                        p + q * 4,
                        [grad[g], grad[g + 1], grad[g + 2], grad[g + 3]],
                    );
                }
            }
        }
    }
}
