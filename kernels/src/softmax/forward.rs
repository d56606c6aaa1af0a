//! Softmax forward in `#[kernel]`: `y = softmax(scale · x)` over each row, the entries past the
//! row's limit (the causal mask) counted as −∞, so they come out 0.
//!
//! Work is in base 2: `t = x · scale · log₂e`, `y = 2^(t − M) / Σ 2^(t − M)`. Column `j` of row
//! `r` takes part when `j ≤ r mod queries + offset`; chunks wholly past that limit are not read
//! from memory (a causal mask skips about half the scores).
//!
//! `softmax` is for rows its group holds in registers (16 elements a thread, 32 for
//! block-owned bf16 rows in 16-byte chunks): the row is read once and written once. `softmax_streaming` takes wider rows: each thread folds its chunks into
//! a running `(max, sum)` as it reads them, the group combines those, and the chunks not held
//! are read again, last to first, so the first it meets are the likeliest still in L2.

use kernel_macros::kernel;

/// `x, y: rows × cols`. The launch must give each thread its whole share of a row.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn softmax<T: Element, const W: u32, const CTA: u32>(
    x: &[T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    scale_log2: f32,
    queries: u32,
    offset: u32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    // Chunks held a thread: 16 elements, or 32 where a block owns a row in 16-byte bf16
    // chunks, so that a wide bf16 row keeps as many bytes in flight as an f32 one.
    let hold = if W == 8 && CTA == 1 { 4 } else { 16 / W };
    while row < rows {
        let base = row * cols;
        let limit = row % queries + offset;
        // One element at a time, a thread issues 16 or more loads at once, too many for a
        // predicate each (ptxas then serializes them): loads past the limit read the chunk
        // holding it instead (no memory traffic), and the scores are masked after. Vector
        // loads are few, and predicated.
        let last = limit / W * W;
        let mut t = [0.0f32; hold * W];
        let mut col = [0u32; hold];
        let mut inside = [false; hold];
        let mut m = f32::NEG_INFINITY;
        for h in 0..hold {
            let c = h * group + lane;
            col[h] = c * W;
            inside[h] = c < chunks;
            let v = if W == 1 {
                x.load_vec::<W>(base + min(col[h], last))
            } else {
                x.load_vec_or::<W>(base + col[h], col[h] <= limit, 0.0 as T)
            };
            for k in 0..W {
                t[h * W + k] = if col[h] + k <= limit {
                    (v[k] as f32) * scale_log2
                } else {
                    f32::NEG_INFINITY
                };
                m = max(m, t[h * W + k]);
            }
        }
        let top = finite_or_zero(group_max(m, lane, group));
        let mut s = 0.0f32;
        for i in 0..(hold * W) {
            t[i] = (t[i] - top).ex2_approx_ftz();
            s += t[i];
        }
        let inv = 1.0 / group_sum(s, lane, group);
        for h in 0..hold {
            if inside[h] {
                let mut out = [0.0 as T; W];
                for k in 0..W {
                    out[k] = (t[h * W + k] * inv) as T;
                }
                y.store_vec::<W>(base + col[h], out);
            }
        }
        row += g[3];
    }
}

/// `x, y: rows × cols`, for rows wider than a group holds (block-per-row launches only). The
/// 16-byte instances run 1024-thread blocks, so they must stay within 64 registers.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], W in [1, T::VEC], CTA in [1]),
    maxnreg = if W == 1 { 128 } else { 64 }
)]
pub fn softmax_streaming<T: Element, const W: u32, const CTA: u32>(
    x: &[T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    scale_log2: f32,
    queries: u32,
    offset: u32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    // Chunks a thread loads per pass of the overflow loops, all issued before any is used.
    let step = (32 / W) * group;
    while row < rows {
        let base = row * cols;
        let limit = row % queries + offset;
        // One element at a time, a thread issues 16 or more loads at once, too many for a
        // predicate each (ptxas then serializes them): loads past the limit read the chunk
        // holding it instead (no memory traffic), and the scores are masked after. Vector
        // loads are few, and predicated.
        let last = limit / W * W;
        let mut t = [0.0f32; 16];
        let mut col = [0u32; 16 / W];
        let mut inside = [false; 16 / W];
        for h in 0..(16 / W) {
            let c = h * group + lane;
            col[h] = c * W;
            inside[h] = c < chunks;
            let v = if W == 1 {
                x.load_vec::<W>(base + min(col[h], last))
            } else {
                x.load_vec_or::<W>(base + col[h], col[h] <= limit, 0.0 as T)
            };
            for k in 0..W {
                t[h * W + k] = if col[h] + k <= limit {
                    (v[k] as f32) * scale_log2
                } else {
                    f32::NEG_INFINITY
                };
            }
        }
        // The running maximum `m` of the scores read so far and `s = Σ 2^(t − m)`.
        let mut m = f32::NEG_INFINITY;
        for i in 0..16 {
            m = max(m, t[i]);
        }
        let mut s = 0.0f32;
        let top = finite_or_zero(m);
        for i in 0..16 {
            s += (t[i] - top).ex2_approx_ftz();
        }
        let mut c0 = (16 / W) * group + lane;
        while c0 < chunks {
            let mut u = [0.0f32; 32];
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                let v = if W == 1 {
                    x.load_vec::<W>(base + min(c * W, last))
                } else {
                    x.load_vec_or::<W>(base + c * W, c * W <= limit, 0.0 as T)
                };
                for k in 0..W {
                    u[h * W + k] = if c * W + k <= limit {
                        (v[k] as f32) * scale_log2
                    } else {
                        f32::NEG_INFINITY
                    };
                }
            }
            let run = online_fold(m, s, u);
            m = run[0];
            s = run[1];
            c0 += step;
        }
        let top = finite_or_zero(group_max(m, lane, group));
        let inv = 1.0 / group_sum(s * (m - top).ex2_approx_ftz(), lane, group);
        for h in 0..(16 / W) {
            if inside[h] {
                let mut out = [0.0 as T; W];
                for k in 0..W {
                    out[k] = ((t[h * W + k] - top).ex2_approx_ftz() * inv) as T;
                }
                y.store_vec::<W>(base + col[h], out);
            }
        }
        // The overflow passes again, last to first.
        let first = (16 / W) * group + lane;
        let mut passes = overflow_passes(first, chunks, step);
        while passes > 0 {
            passes -= 1;
            let c0 = first + passes * step;
            // Every load of the pass is issued before the first store, which the compiler
            // could not move them above.
            let mut u = [0.0f32; 32];
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                let v = if W == 1 {
                    x.load_vec::<W>(base + min(c * W, last))
                } else {
                    x.load_vec_or::<W>(base + c * W, c * W <= limit, 0.0 as T)
                };
                for k in 0..W {
                    u[h * W + k] = if c * W + k <= limit {
                        ((v[k] as f32) * scale_log2 - top).ex2_approx_ftz() * inv
                    } else {
                        0.0
                    };
                }
            }
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                if c < chunks {
                    let mut out = [0.0 as T; W];
                    for k in 0..W {
                        out[k] = u[h * W + k] as T;
                    }
                    y.store_vec::<W>(base + c * W, out);
                }
            }
        }
        row += g[3];
    }
}
