//! Softmax backward in `#[kernel]`: with `y = softmax(scale · x)`,
//! `dx = scale · y ⊙ (dy − ⟨y, dy⟩)` per row. Masked entries have `y = 0`, so they get `dx = 0`
//! without the mask being passed again.
//!
//! Each thread holds 16 elements of `y` and of `dy` between the dot product and the write; wider
//! rows read the rest again, last to first.

use kernel_macros::kernel;

/// `y, dy, dx: rows × cols`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn softmax_backward<T: Element, const W: u32, const CTA: u32>(
    y: &[T],
    dy: &[T],
    dx: &mut [T],
    rows: u32,
    cols: u32,
    scale: f32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    // Chunks a thread loads per pass of the overflow loops, all issued before any is used.
    let step = (16 / W) * group;
    while row < rows {
        let base = row * cols;
        let mut yh = [0.0f32; 16];
        let mut gh = [0.0f32; 16];
        let mut col = [0u32; 16 / W];
        let mut inside = [false; 16 / W];
        let mut dot = 0.0f32;
        for h in 0..(16 / W) {
            let c = h * group + lane;
            col[h] = c * W;
            inside[h] = c < chunks;
            // One element at a time, 32 loads at once are too many for a predicate each
            // (ptxas then serializes them): read the last chunk instead, and zero after.
            let at = if W == 1 {
                min(col[h], cols - 1)
            } else {
                col[h]
            };
            let yv = if W == 1 {
                y.load_vec::<W>(base + at)
            } else {
                y.load_vec_or::<W>(base + at, inside[h], 0.0 as T)
            };
            let gv = if W == 1 {
                dy.load_vec::<W>(base + at)
            } else {
                dy.load_vec_or::<W>(base + at, inside[h], 0.0 as T)
            };
            for k in 0..W {
                // Vector loads already read 0 outside the row; clamped ones are zeroed.
                yh[h * W + k] = if W > 1 || inside[h] {
                    yv[k] as f32
                } else {
                    0.0
                };
                // Vector loads already read 0 outside the row; clamped ones are zeroed.
                gh[h * W + k] = if W > 1 || inside[h] {
                    gv[k] as f32
                } else {
                    0.0
                };
                dot = yh[h * W + k].mul_add(gh[h * W + k], dot);
            }
        }
        let first = (16 / W) * group + lane;
        let mut c0 = first;
        while c0 < chunks {
            let mut yo = [0.0f32; 16];
            let mut go = [0.0f32; 16];
            for h in 0..(16 / W) {
                let c = c0 + h * group;
                let yv = y.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T);
                let gv = dy.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T);
                for k in 0..W {
                    yo[h * W + k] = yv[k] as f32;
                    go[h * W + k] = gv[k] as f32;
                }
            }
            for i in 0..16 {
                dot = yo[i].mul_add(go[i], dot);
            }
            c0 += step;
        }
        let total = group_sum(dot, lane, group);
        for h in 0..(16 / W) {
            if inside[h] {
                let mut out = [0.0 as T; W];
                for k in 0..W {
                    out[k] = (yh[h * W + k] * (gh[h * W + k] - total) * scale) as T;
                }
                dx.store_vec::<W>(base + col[h], out);
            }
        }
        let mut passes = overflow_passes(first, chunks, step);
        while passes > 0 {
            passes -= 1;
            let c0 = first + passes * step;
            // Every load of the pass is issued before the first store, which the compiler
            // could not move them above.
            let mut yo = [0.0f32; 16];
            let mut go = [0.0f32; 16];
            for h in 0..(16 / W) {
                let c = c0 + h * group;
                let yv = y.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T);
                let gv = dy.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T);
                for k in 0..W {
                    yo[h * W + k] = yv[k] as f32;
                    go[h * W + k] = gv[k] as f32;
                }
            }
            for h in 0..(16 / W) {
                let c = c0 + h * group;
                if c < chunks {
                    let mut out = [0.0 as T; W];
                    for k in 0..W {
                        out[k] = (yo[h * W + k] * (go[h * W + k] - total) * scale) as T;
                    }
                    dx.store_vec::<W>(base + c * W, out);
                }
            }
        }
        row += g[3];
    }
}
