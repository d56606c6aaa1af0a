//! Softmax cross-entropy with each row split over several blocks, so that the row is read once:
//! a block holds its slice of the row in registers, and the row's blocks exchange their
//! (max, sum) partials through the workspace before each writes its slice's gradient. The
//! streamed kernel (`loss_kernel`) reads what its registers cannot hold a second time, which
//! for a vocabulary row wider than L2's share of an SM is a second pass over DRAM.
//!
//! Blocks wait for one another, so a block must never wait on one that cannot start. Each
//! block takes a ticket (`atomic_inc` on word 0) when it starts and works on the slice the
//! ticket names: row `ticket / slices`, slice `ticket % slices`. Tickets go out in the order
//! blocks start, so every block a waiting block needs has its ticket already or will get the
//! next ones, and only the row holding the newest ticket can be incomplete: with room for
//! `slices` blocks on the GPU, someone always makes progress. The ticket counter wraps to 0
//! after the grid's last ticket, ready for the next launch.
//!
//! Workspace (u32 words): the ticket counter, one counter per row, then `(max, sum)` bits per
//! slice, row-major. A row's counter counts arrivals (0 to `slices`), then departures after
//! each block has read the partials; `atomic_inc` wraps it to 0 at the last departure, which
//! comes only after every block has seen `slices`, so the counters need zeroing only once,
//! before the first use (partials are written before they are read). Every block of a row
//! folds the same partials in the same lanes in the same order, so they agree on the
//! log-sum-exp to the bit, and reruns are bit-identical. A row of one slice skips the
//! exchange: its block's own (max, sum) is the row's.

use kernel_macros::kernel;

/// Threads per block (the kernel's `block`); the host's plan divides rows by this.
pub(crate) const SPLIT_THREADS: u32 = 256;
/// Elements of its slice each thread holds in registers.
pub(crate) const SPLIT_HELD: u32 = 32;

/// `logits, dlogits: rows × cols`; `targets, row_loss: rows`; `loss: [mean, count]`;
/// `workspace`: see the module. `rows × slices` blocks; slice `s` of a row covers chunks
/// `s · per .. min((s + 1) · per, cols / W)`, at most `256 · 32 / W` of them; `slices ≤ 32`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [T::VEC]), block = 256)]
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy_split<T: Element, const W: u32>(
    logits: &[T],
    targets: &[i32],
    loss: &[f32],
    dlogits: &mut [T],
    row_loss: &mut [f32],
    workspace: &mut [u32],
    rows: u32,
    cols: u32,
    ignore_index: i32,
    slices: u32,
    per: u32,
) {
    let t = thread_idx().x;
    let ticket_of = shared_array::<u32, 1>();
    let lse_of = shared_array::<f32, 1>();
    // A row of one slice waits for no one, so it needs no ticket (nor the exchange below).
    if t == 0 {
        if slices == 1 {
            ticket_of[0] = block_idx().x;
        } else {
            ticket_of[0] = workspace.atomic_inc(0, grid_dim().x - 1);
        }
    }
    sync_threads();
    let ticket = ticket_of[0];
    let row = ticket / slices;
    let slice = ticket - row * slices;
    let chunks = cols / W;
    let c0 = slice * per;
    let c1 = min(c0 + per, chunks);
    let base = row * cols;
    let log2e = 1.442_695_f32;
    let mut v = [0.0f32; 32];
    let mut inside = [false; 32 / W];
    for h in 0..(32 / W) {
        let c = c0 + h * 256 + t;
        inside[h] = c < c1;
        let x = logits.load_vec_or::<W>(base + c * W, inside[h], 0.0 as T);
        for k in 0..W {
            v[h * W + k] = if inside[h] {
                (x[k] as f32) * log2e
            } else {
                f32::NEG_INFINITY
            };
        }
    }
    let target = targets[row];
    let ignored = target == ignore_index;
    // As u32, a negative target is huge, so one comparison checks both ends.
    let tu = target as u32;
    let in_range = tu < cols;
    let mut factor = f32::NAN;
    if in_range {
        factor = 1.0 / loss[1];
    }
    if ignored {
        factor = 0.0;
    }
    let mut t_target = f32::NAN;
    if t == 0 && slice == 0 && in_range {
        t_target = (logits[base + tu] as f32) * log2e;
    }
    let mut m = f32::NEG_INFINITY;
    for i in 0..32 {
        m = max(m, v[i]);
    }
    let own = finite_or_zero(m);
    let mut s = 0.0f32;
    for i in 0..32 {
        s += (v[i] - own).ex2_approx_ftz();
    }
    let slice_max = block_max(m, t, 256);
    let top = finite_or_zero(slice_max);
    let slice_sum = block_sum(s * (m - top).ex2_approx_ftz(), t, 256);
    if t < 32 {
        // One slice: the block's own (max, sum) is the row's, as the fold below would give.
        let mut lse = top + slice_sum.log2();
        let counter = 1 + row;
        let first = 1 + rows + row * slices * 2;
        if slices > 1 && t == 0 {
            workspace[first + slice * 2] = slice_max.to_bits();
            workspace[first + slice * 2 + 1] = slice_sum.to_bits();
            fence_gpu();
            workspace.atomic_inc(counter, 2 * slices - 1);
        }
        // The whole warp waits, so that each lane's own reads of the partials come after its
        // own sight of the count. The siblings started with neighbouring tickets and are
        // usually close behind; past a few reads, sleep between them.
        if slices > 1 {
            let mut spins = 0u32;
            while workspace.load_cg(counter) < slices {
                spins += 1;
                if spins > 64 {
                    nanosleep(32);
                }
            }
            fence_gpu();
            let p = min(t, slices - 1);
            let pm = from_bits(workspace.load_cg(first + p * 2));
            let ps = from_bits(workspace.load_cg(first + p * 2 + 1));
            let mine = t < slices;
            let row_max = warp_max(if mine { pm } else { f32::NEG_INFINITY });
            let row_top = finite_or_zero(row_max);
            let row_sum = warp_sum(if mine {
                ps * (pm - row_top).ex2_approx_ftz()
            } else {
                0.0
            });
            if t == 0 {
                workspace.atomic_inc(counter, 2 * slices - 1);
            }
            lse = row_top + row_sum.log2();
        }
        if t == 0 {
            lse_of[0] = lse;
            if slice == 0 {
                row_loss[row] = if ignored {
                    0.0
                } else {
                    (lse - t_target) * 0.693_147_2
                };
            }
        }
    }
    sync_threads();
    let lse = lse_of[0];
    for h in 0..(32 / W) {
        if inside[h] {
            let col = (c0 + h * 256 + t) * W;
            let mut out = [0.0 as T; W];
            for k in 0..W {
                let p = (v[h * W + k] - lse).ex2_approx_ftz();
                let gk = if col + k == tu { p - 1.0 } else { p };
                out[k] = (gk * factor) as T;
            }
            dlogits.store_vec::<W>(base + col, out);
        }
    }
}
