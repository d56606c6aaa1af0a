//! RMSNorm forward in `#[kernel]`, plain and fused with a residual add:
//! `y = s · rstd · γ` with `rstd = 1/√(mean(s²) + eps)`, where `s = x`, or for the fused form
//! `s = x + residual`, rounded to `T` and also written to `sum`.
//!
//! One source holds every specialization: element type `T`, access width `W` (one element, or
//! 16 bytes when every row starts aligned) and the row group (`CTA = 0`: a warp per row;
//! `CTA = 1`: a block per row, with barriers only that instance has). Each thread keeps its
//! first 16 elements of the row in registers between the reduction and the write; wider rows
//! read the rest again. Block-per-row instances take up to 1024 threads, so they stay within
//! 64 registers, except the fused form's one-element instances, which read all of a chunk's
//! loads under one guard and hold γ across the reduction (74 or 76 registers, faster than
//! the 56 of clamped loads) and so take up to 768 (`tests/instance_registers.rs` checks both).
//! No launch bound says so: `maxnreg = 64` lets ptxas take 40 to 56 and halves occupancy, and
//! `max_threads = 1024` trims them to 32 with spills (measured in BENCHMARKS.md).

use kernel_macros::kernel;

/// `x, gamma, y: rows × cols` (γ: `cols`).
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn rms_norm<T: Element, const W: u32, const CTA: u32>(
    x: &[T],
    gamma: &[T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    eps: f32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    let cols_f = cols as f32;
    while row < rows {
        let base = row * cols;
        // Held: chunk `lane + h·group` for h < 16 / W, so 16 elements per thread.
        let mut held = [0.0f32; 16];
        // Each held chunk's first column and whether it is inside the row, kept for the
        // later passes rather than recomputed.
        let mut col = [0u32; 16 / W];
        let mut inside = [false; 16 / W];
        let mut ss = 0.0f32;
        for h in 0..(16 / W) {
            let c = h * group + lane;
            col[h] = c * W;
            inside[h] = c < chunks;
            // One element at a time, 16 guarded loads are too many for a predicate each
            // (ptxas then serializes them): read the row's last element instead, and zero it.
            let v = if W == 1 {
                x.load_vec::<W>(base + min(col[h], cols - 1))
            } else {
                x.load_vec_or::<W>(base + col[h], inside[h], 0.0 as T)
            };
            for k in 0..W {
                // Vector loads already read 0 outside the row; clamped ones are zeroed.
                held[h * W + k] = if W > 1 || inside[h] { v[k] as f32 } else { 0.0 };
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
        let rstd = (group_sum(ss, lane, group) / cols_f + eps).rsqrt_rn();
        for h in 0..(16 / W) {
            if inside[h] {
                let mut out = gamma.load_vec::<W>(col[h]);
                for k in 0..W {
                    out[k] = (held[h * W + k] * rstd * (out[k] as f32)) as T;
                }
                y.store_vec::<W>(base + col[h], out);
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let mut out = x.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            for k in 0..W {
                out[k] = ((out[k] as f32) * rstd * (gv[k] as f32)) as T;
            }
            y.store_vec::<W>(base + c * W, out);
            c += group;
        }
        row += g[3];
    }
}

/// `x, residual, sum, y: rows × cols` (γ: `cols`). The norm reads the stored, rounded sum, so
/// the result matches an add followed by `rms_norm`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn add_rms_norm<T: Element, const W: u32, const CTA: u32>(
    x: &[T],
    residual: &[T],
    gamma: &[T],
    sum: &mut [T],
    y: &mut [T],
    rows: u32,
    cols: u32,
    eps: f32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    let cols_f = cols as f32;
    // bf16 rows in 16-byte vectors on blocks of up to 512 threads store each chunk's sum as
    // it is formed, its loads guarded by a branch (so a thread's next chunk is read after that
    // store); other vector rows read every held chunk first and store the sums with the
    // outputs. Each is the faster where it is used; neither is on the other's rows.
    let formed = W == 8 && group <= 512;
    while row < rows {
        let base = row * cols;
        let mut held = [0.0f32; 16];
        let mut ss = 0.0f32;
        // The choice is made once a row, outside the chunk loop: a branch between two chunks
        // keeps ptxas from issuing the second chunk's loads before the first's are used.
        if W == 1 || formed {
            for h in 0..(16 / W) {
                let c = h * group + lane;
                if c < chunks {
                    let mut s = x.load_vec::<W>(base + c * W);
                    let r = residual.load_vec::<W>(base + c * W);
                    for k in 0..W {
                        s[k] = ((s[k] as f32) + (r[k] as f32)) as T;
                        held[h * W + k] = s[k] as f32;
                    }
                    if W > 1 {
                        sum.store_vec::<W>(base + c * W, s);
                    }
                }
                for k in 0..W {
                    ss = held[h * W + k].mul_add(held[h * W + k], ss);
                }
            }
        } else {
            for h in 0..(16 / W) {
                let c = h * group + lane;
                let inside = c < chunks;
                let mut s = x.load_vec_or::<W>(base + c * W, inside, 0.0 as T);
                let r = residual.load_vec_or::<W>(base + c * W, inside, 0.0 as T);
                for k in 0..W {
                    s[k] = ((s[k] as f32) + (r[k] as f32)) as T;
                    // Outside the row both loads read 0, so the held sum is 0 too.
                    held[h * W + k] = s[k] as f32;
                    ss = held[h * W + k].mul_add(held[h * W + k], ss);
                }
            }
        }
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let mut s = x.load_vec::<W>(base + c * W);
            let r = residual.load_vec::<W>(base + c * W);
            for k in 0..W {
                s[k] = ((s[k] as f32) + (r[k] as f32)) as T;
                let f = s[k] as f32;
                ss = f.mul_add(f, ss);
            }
            sum.store_vec::<W>(base + c * W, s);
            c += group;
        }
        // One element at a time, the held sums are stored before the reduction (every load
        // of the row is already issued by now) and γ is read, so that both are in flight
        // while the block sums rather than after.
        let mut gh = [0.0 as T; 16 / W];
        if W == 1 {
            for h in 0..16 {
                if h * group + lane < chunks {
                    sum[base + h * group + lane] = held[h] as T;
                }
            }
            for h in 0..16 {
                gh[h] = gamma[min(h * group + lane, cols - 1)];
            }
        }
        let rstd = (group_sum(ss, lane, group) / cols_f + eps).rsqrt_rn();
        // Columns are recomputed rather than kept (16 more live registers).
        for h in 0..(16 / W) {
            let c = h * group + lane;
            if c < chunks {
                let mut s = [0.0 as T; W];
                let mut out = if W == 1 {
                    [gh[h]; W]
                } else {
                    gamma.load_vec::<W>(c * W)
                };
                for k in 0..W {
                    // Exact: `held` is the rounded sum, widened.
                    s[k] = held[h * W + k] as T;
                    out[k] = (held[h * W + k] * rstd * (out[k] as f32)) as T;
                }
                if W > 1 && !formed {
                    sum.store_vec::<W>(base + c * W, s);
                }
                y.store_vec::<W>(base + c * W, out);
            }
        }
        // Wide rows: read back the sums this thread stored above.
        let mut c = (16 / W) * group + lane;
        while c < chunks {
            let mut out = sum.load_vec::<W>(base + c * W);
            let gv = gamma.load_vec::<W>(c * W);
            for k in 0..W {
                out[k] = ((out[k] as f32) * rstd * (gv[k] as f32)) as T;
            }
            y.store_vec::<W>(base + c * W, out);
            c += group;
        }
        row += g[3];
    }
}
