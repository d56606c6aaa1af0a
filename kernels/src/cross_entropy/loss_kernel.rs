//! Softmax cross-entropy in `#[kernel]`: the fused pass over each row of logits (loss and
//! gradient), and the two single-block passes around it (counting the rows not ignored before,
//! averaging the row losses after).
//!
//! In base 2 (`t = x · log₂e`): the online (max, sum) of the row gives `lse₂ = M + log₂ S`; the
//! row's loss is `(lse₂ − t[target]) · ln 2`, and its gradient
//! `(2^(t − lse₂) − [j = target]) / count`, where `count` (non-ignored rows) was written to
//! `loss[1]` by the counting pass. Ignored rows get loss 0 and gradient 0; a target outside
//! `0..cols` that is not the ignore index gets NaN for both, so the mistake shows.
//!
//! A vocabulary row is far wider than a block holds, so each thread holds only a few chunks
//! (16 elements one at a time, 2 chunks of 16 bytes) and streams the rest: it folds them into
//! a running (max, sum) as it reads them, and reads them again, last to first, for the
//! gradient, so that the first it meets are the likeliest still in L2.

use kernel_macros::kernel;

/// `logits, dlogits: rows × cols`; `targets, row_loss: rows`; `loss: [mean, count]`. The f32
/// 16-byte block-per-row instance runs blocks of up to 1024 threads, so it stays within 64
/// registers; the bf16 one runs blocks of 512 threads held to 56 registers (ptxas takes 72
/// unbounded, and does not spill at 56), so that two fit an SM; the others are uncapped.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]),
    maxnreg = if W == 4 && CTA == 1 { 64 } else if W == 8 && CTA == 1 { 56 } else { 0 }
)]
pub fn cross_entropy<T: Element, const W: u32, const CTA: u32>(
    logits: &[T],
    targets: &[i32],
    loss: &[f32],
    dlogits: &mut [T],
    row_loss: &mut [f32],
    rows: u32,
    cols: u32,
    ignore_index: i32,
) {
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = cols / W;
    let log2e = 1.442_695_f32;
    let inv_count = 1.0 / loss[1];
    let hold = if W == 1 { 16 } else { 2 };
    // Chunks a thread loads per pass of the overflow loops, all issued before any is used.
    let step = (32 / W) * group;
    while row < rows {
        let base = row * cols;
        let target = targets[row];
        let ignored = target == ignore_index;
        // As u32, a negative target is huge, so one comparison checks both ends.
        let tu = target as u32;
        let in_range = tu < cols;
        let mut factor = f32::NAN;
        if in_range {
            factor = inv_count;
        }
        if ignored {
            factor = 0.0;
        }
        let mut t = [0.0f32; hold * W];
        let mut col = [0u32; hold];
        let mut inside = [false; hold];
        for h in 0..hold {
            let c = h * group + lane;
            col[h] = c * W;
            inside[h] = c < chunks;
            // One element at a time, 16 guarded loads are too many for a predicate each
            // (ptxas then serializes them): read the row's last element instead.
            let v = if W == 1 {
                logits.load_vec::<W>(base + min(col[h], cols - 1))
            } else {
                logits.load_vec_or::<W>(base + col[h], inside[h], 0.0 as T)
            };
            for k in 0..W {
                t[h * W + k] = if inside[h] {
                    (v[k] as f32) * log2e
                } else {
                    f32::NEG_INFINITY
                };
            }
        }
        // Read after the held chunks' loads are issued: it waits on `targets[row]`, and the
        // compiler would not move those loads above its branch.
        let mut t_target = f32::NAN;
        if in_range {
            t_target = (logits[base + tu] as f32) * log2e;
        }
        // The running maximum `m` of the scores read so far and `s = Σ 2^(t − m)`.
        let mut m = f32::NEG_INFINITY;
        for i in 0..(hold * W) {
            m = max(m, t[i]);
        }
        let mut s = 0.0f32;
        let top = finite_or_zero(m);
        for i in 0..(hold * W) {
            s += (t[i] - top).ex2_approx_ftz();
        }
        let first = hold * group + lane;
        let mut c0 = first;
        while c0 < chunks {
            let mut u = [0.0f32; 32];
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                let v = if W == 1 {
                    logits.load_vec::<W>(base + min(c, chunks - 1))
                } else {
                    logits.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T)
                };
                for k in 0..W {
                    u[h * W + k] = if c < chunks {
                        (v[k] as f32) * log2e
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
        let lse = top + group_sum(s * (m - top).ex2_approx_ftz(), lane, group).log2();
        if lane == 0 {
            row_loss[row] = if ignored {
                0.0
            } else {
                (lse - t_target) * 0.693_147_2
            };
        }
        for h in 0..hold {
            if inside[h] {
                let mut out = [0.0 as T; W];
                for k in 0..W {
                    let p = (t[h * W + k] - lse).ex2_approx_ftz();
                    let gk = if col[h] + k == tu { p - 1.0 } else { p };
                    out[k] = (gk * factor) as T;
                }
                dlogits.store_vec::<W>(base + col[h], out);
            }
        }
        // The overflow passes again, last to first; every load of a pass is issued before
        // its first store, which the compiler could not move them above.
        let mut passes = overflow_passes(first, chunks, step);
        while passes > 0 {
            passes -= 1;
            let c0 = first + passes * step;
            let mut u = [0.0f32; 32];
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                let v = if W == 1 {
                    logits.load_vec::<W>(base + min(c, chunks - 1))
                } else {
                    logits.load_vec_or::<W>(base + c * W, c < chunks, 0.0 as T)
                };
                for k in 0..W {
                    let p = ((v[k] as f32) * log2e - lse).ex2_approx_ftz();
                    u[h * W + k] = if c * W + k == tu { p - 1.0 } else { p };
                }
            }
            for h in 0..(32 / W) {
                let c = c0 + h * group;
                if c < chunks {
                    let mut out = [0.0 as T; W];
                    for k in 0..W {
                        out[k] = (u[h * W + k] * factor) as T;
                    }
                    dlogits.store_vec::<W>(base + c * W, out);
                }
            }
        }
        row += g[3];
    }
}

/// One block: `loss[1]` = rows whose target is not `ignore_index` (as f32: exact below 2²⁴
/// rows), summed in a fixed order. A thread reads 16 rows a step, every load issued before any
/// is counted, so the block waits one round trip per 16 × 256 rows, not per 256.
#[kernel(crate = crate::lang, block = 256)]
pub fn cross_entropy_count(targets: &[i32], loss: &mut [f32], rows: u32, ignore_index: i32) {
    let t = thread_idx().x;
    let threads = block_dim().x;
    let mut n = 0.0f32;
    let mut r = t;
    while r < rows {
        let mut kept = [0.0f32; 16];
        for h in 0..16 {
            let i = r + h * threads;
            let v = targets.load_vec_or::<1>(i, i < rows, ignore_index);
            kept[h] = if v[0] != ignore_index { 1.0 } else { 0.0 };
        }
        for h in 0..16 {
            n += kept[h];
        }
        r += 16 * threads;
    }
    let total = block_sum(n, t, threads);
    if t == 0 {
        loss[1] = total;
    }
}

/// One block: `loss[0] = Σ row_loss / loss[1]`, summed in a fixed order (each thread its rows
/// in increasing order, the same order as one row a step), 16 rows a thread a step as the
/// count reads them.
#[kernel(crate = crate::lang, block = 256)]
pub fn cross_entropy_mean(row_loss: &[f32], loss: &mut [f32], rows: u32) {
    let t = thread_idx().x;
    let threads = block_dim().x;
    let mut acc = 0.0f32;
    let mut r = t;
    while r < rows {
        let mut part = [0.0f32; 16];
        for h in 0..16 {
            let i = r + h * threads;
            let v = row_loss.load_vec_or::<1>(i, i < rows, 0.0);
            part[h] = v[0];
        }
        for h in 0..16 {
            acc += part[h];
        }
        r += 16 * threads;
    }
    let total = block_sum(acc, t, threads);
    if t == 0 {
        loss[0] = total / loss[1];
    }
}
