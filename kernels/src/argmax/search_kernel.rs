//! Greedy decoding's arg-max over each row in `#[kernel]`, a row split over several blocks (see
//! `plan`): each block walks its segment of the row, every thread 8 chunks per step with all
//! loads issued before any is used, keeping its best (value, column); the block keeps the best
//! of those, and the row's last block to finish merges the segments' partials. Ties go to the
//! lowest column at every step, so the result does not depend on the split. NaN counts as +∞.
//!
//! Workspace (u32 words): `rows` counters, then `(key, column)` per segment, row-major. A key
//! is the value's bits made to order as unsigned integers do (`order_key`). Thread 0 stores
//! its block's partial, fences, and bumps the row's counter with `atomic_inc` wrapping at
//! `splits − 1`: the block that reads `splits − 1` is the last, and the wrap leaves the counter
//! at 0 for the next launch. Its warp 0 then reads every partial of the row through L2, after a
//! fence, and keeps the best.

use kernel_macros::{device, kernel};

/// The bits of `v` as a key that orders as `v` does (−0 and +0 alike): positive values with
/// the sign bit set, negative ones with every bit flipped.
#[device(crate = crate::lang)]
pub(crate) fn order_key(v: f32) -> u32 {
    let bits = (v + 0.0).to_bits();
    if bits >= 0x8000_0000 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `logits: rows × cols`; `index: rows`; `workspace`: see the module. Launched with one block
/// of 256 threads per segment (`splits` per row, `seg` chunks each). Held to 32 registers, so
/// that eight blocks fit an SM of 2048 threads and the plan's 1024 blocks run in one wave on a
/// 132-SM GPU; at ptxas's unbounded 34 (allocated as 40) six fit, and the last third of the
/// blocks ran as a second wave. (`min_blocks = 8` would say the same on sm_90, but ptxas
/// rejects it where an SM holds fewer than 2048 threads.)
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], W in [1, T::VEC]),
    block = 256,
    maxnreg = 32
)]
pub fn argmax<T: Element, const W: u32>(
    logits: &[T],
    index: &mut [u32],
    workspace: &mut [u32],
    rows: u32,
    cols: u32,
    splits: u32,
    seg: u32,
) {
    let t = thread_idx().x;
    let lane = t % 32;
    let chunks = cols / W;
    let segments = rows * splits;
    let vals = shared_array::<f32, 8>();
    let cols_of = shared_array::<u32, 8>();
    // Block-uniform: every thread of a block works on the same segment.
    let mut w = block_idx().x;
    while w < segments {
        let row = w / splits;
        let split = w - row * splits;
        let s0 = split * seg;
        let s1 = min(s0 + seg, chunks);
        let base = row * cols;
        // −∞ at the segment's first column: a real entry no larger than any other, so it wins
        // only where every value is −∞, and then it is the right answer.
        let mut best = f32::NEG_INFINITY;
        let mut at = s0 * W;
        let mut c = s0 + t;
        while c < s1 {
            // Chunks past the segment load its last chunk again (a cache hit): a repeated
            // (value, column) changes no candidate, so no load needs a guard.
            let mut col = [0u32; 8];
            if W == 8 {
                // bf16 in 16-byte chunks: held as the loaded words and widened by a shift or a
                // mask as each is compared, rather than split into 16-bit registers first.
                let mut raw = [0u32; 32];
                for h in 0..8 {
                    col[h] = min(c + h * 256, s1 - 1) * W;
                    let x = logits.load_words::<4>(base + col[h]);
                    for j in 0..4 {
                        raw[h * 4 + j] = x[j];
                    }
                }
                for h in 0..8 {
                    for j in 0..4 {
                        // `min` returns its other operand for NaN: NaN counts as +∞.
                        let lo = min(from_bits(raw[h * 4 + j] << 16), f32::INFINITY);
                        let hi = min(from_bits(raw[h * 4 + j] & 0xffff_0000), f32::INFINITY);
                        // A thread meets its columns in increasing order (repeats aside), so
                        // only a strictly greater value replaces its candidate.
                        let greater = lo > best;
                        at = if greater { col[h] + 2 * j } else { at };
                        best = if greater { lo } else { best };
                        let greater = hi > best;
                        at = if greater { col[h] + 2 * j + 1 } else { at };
                        best = if greater { hi } else { best };
                    }
                }
            } else {
                let mut v = [0.0f32; 8 * W];
                for h in 0..8 {
                    col[h] = min(c + h * 256, s1 - 1) * W;
                    let x = logits.load_vec::<W>(base + col[h]);
                    for k in 0..W {
                        // `min` returns its other operand for NaN: NaN counts as +∞.
                        v[h * W + k] = min(x[k] as f32, f32::INFINITY);
                    }
                }
                // A thread meets its columns in increasing order (repeats aside), so only a
                // strictly greater value replaces its candidate.
                for h in 0..8 {
                    for k in 0..W {
                        let greater = v[h * W + k] > best;
                        at = if greater { col[h] + k } else { at };
                        best = if greater { v[h * W + k] } else { best };
                    }
                }
            }
            c += 8 * 256;
        }
        for d in [16, 8, 4, 2, 1] {
            let ov = shfl_xor(best, d);
            let oc = shfl_xor(at, d);
            let take = ov > best || (ov == best && oc < at);
            best = if take { ov } else { best };
            at = if take { oc } else { at };
        }
        if lane == 0 {
            vals[t / 32] = best;
            cols_of[t / 32] = at;
        }
        sync_threads();
        // Every lane reads a slot some warp wrote (8 warps), and keeps it only if it is its
        // own warp's.
        let pv = vals[min(lane, 7)];
        let pc = cols_of[min(lane, 7)];
        best = if lane < 8 { pv } else { f32::NEG_INFINITY };
        at = if lane < 8 { pc } else { u32::MAX };
        for d in [16, 8, 4, 2, 1] {
            let ov = shfl_xor(best, d);
            let oc = shfl_xor(at, d);
            let take = ov > best || (ov == best && oc < at);
            best = if take { ov } else { best };
            at = if take { oc } else { at };
        }
        // The next segment writes `vals` again.
        sync_threads();
        if t < 32 {
            let mut ticket = 0u32;
            if t == 0 {
                let slot = rows + (row * splits + split) * 2;
                workspace[slot] = order_key(best);
                workspace[slot + 1] = at;
                fence_gpu();
                ticket = workspace.atomic_inc(row, splits - 1);
            }
            ticket = shfl_idx(ticket, 0);
            if ticket == splits - 1 {
                fence_gpu();
                let mut key = 0u32;
                let mut col = u32::MAX;
                let mut p = lane;
                while p < splits {
                    let slot = rows + (row * splits + p) * 2;
                    let k = workspace.load_cg(slot);
                    let pc = workspace.load_cg(slot + 1);
                    let take = k > key || (k == key && pc < col);
                    key = if take { k } else { key };
                    col = if take { pc } else { col };
                    p += 32;
                }
                for d in [16, 8, 4, 2, 1] {
                    let ok = shfl_xor(key, d);
                    let oc = shfl_xor(col, d);
                    let take = ok > key || (ok == key && oc < col);
                    key = if take { ok } else { key };
                    col = if take { oc } else { col };
                }
                if t == 0 {
                    index[row] = col;
                }
            }
        }
        w += grid_dim().x;
    }
}
