//! Gradient clipping in `#[kernel]`: per-block sums of squares, one block that adds them in a
//! fixed order into the norm and the clip scale, and the in-place scaling (which writes
//! nothing when the scale is 1).
//!
//! Both passes over the gradients run a grid of at most `MAX_PARTS` blocks, so a grid that
//! has nothing to scale costs one wave: every block reads the scale once and returns (a grid
//! of one vector a thread spent more time reading the scale than the sum of squares took to
//! read the gradients). The sum of squares loops grid-stride, issuing the loads of several
//! 16-byte vectors before using any. The scaling takes its work in chunks from a counter, in
//! the order blocks ask: a fixed grid-stride split lets blocks drift apart, spreading the
//! reads and writes over more of DRAM at once than the hardware's in-order dispatch of a full
//! grid does, and measured slower.

use kernel_macros::kernel;

/// `partial[b]` = the sum of squares of block `b`'s grid-stride share of `grads[..n]`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]))]
pub fn grad_sum_squares<T: Element>(grads: &[T], partial: &mut [f32], n: u32) {
    let stride = block_dim().x * grid_dim().x;
    let first = block_idx().x * block_dim().x + thread_idx().x;
    let vectors = n / T::VEC;
    // Vectors a thread loads before adding any.
    let hold = 4;
    let mut acc = 0.0f32;
    let mut j = first;
    while j < vectors {
        let mut held = [0.0f32; hold * T::VEC];
        for h in 0..hold {
            let jh = j + h * stride;
            let x = grads.load_vec_or::<{ T::VEC }>(jh * T::VEC, jh < vectors, 0.0 as T);
            for k in 0..T::VEC {
                held[h * T::VEC + k] = x[k] as f32;
            }
        }
        for e in 0..(hold * T::VEC) {
            acc = held[e].mul_add(held[e], acc);
        }
        j += hold * stride;
    }
    let mut i = vectors * T::VEC + first;
    while i < n {
        let x = grads[i] as f32;
        acc = x.mul_add(x, acc);
        i += stride;
    }
    let total = block_sum(acc, thread_idx().x, block_dim().x);
    if thread_idx().x == 0 {
        partial[block_idx().x] = total;
    }
}

/// One block: adds `partial[..parts]` in a fixed order and writes
/// `norm_scale = [‖g‖, min(1, max_norm / (‖g‖ + 1e-6))]`, with scale 1 where the norm is not
/// finite (an overflow or a NaN gradient): the gradients then stay as they are and the caller
/// sees the norm. Also zeroes `partial[counter]`, the counter [`grad_scale`] takes its chunks
/// from, so that a workspace needs no zeroing of its own.
#[kernel(crate = crate::lang, block = 1024)]
pub fn grad_norm_finish(
    partial: &mut [f32],
    norm_scale: &mut [f32],
    parts: u32,
    counter: u32,
    max_norm: f32,
) {
    let t = thread_idx().x;
    let mut acc = 0.0f32;
    let mut i = t;
    while i < parts {
        acc += partial[i];
        i += block_dim().x;
    }
    let norm = block_sum(acc, t, block_dim().x).sqrt();
    let clipped = min(max_norm / (norm + 1e-6), 1.0);
    let scale = if norm < f32::INFINITY { clipped } else { 1.0 };
    if t == 0 {
        norm_scale[0] = norm;
        norm_scale[1] = scale;
        partial[counter] = 0.0;
    }
}

/// `grads[..n] *= norm_scale[1]` where the scale is below 1; otherwise (1, or NaN) nothing is
/// written. Each block takes chunks of two vectors a thread from `workspace[counter]` (zeroed
/// by [`grad_norm_finish`]) until none is left. The counter is an f32, exact while it counts
/// below 2^24: chunks plus blocks stay under 2^22 for any `u32` length.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]))]
pub fn grad_scale<T: Element>(
    grads: &mut [T],
    norm_scale: &[f32],
    workspace: &mut [f32],
    counter: u32,
    n: u32,
) {
    let scale = norm_scale[1];
    if scale < 1.0 {
        let t = thread_idx().x;
        let threads = block_dim().x;
        let vectors = n / T::VEC;
        let hold = 2;
        let chunk = hold * threads;
        let chunks = (vectors + chunk - 1) / chunk;
        let ticket_of = shared_array::<u32, 1>();
        let mut more = true;
        while more {
            if t == 0 {
                ticket_of[0] = workspace.atomic_add(counter, 1.0) as u32;
            }
            sync_threads();
            let ticket = ticket_of[0];
            // Also the barrier that keeps thread 0's next ticket from overwriting this one
            // before every thread has read it.
            more = sync_threads_or(ticket < chunks);
            if ticket < chunks {
                // Last chunk first: the sum of squares read the gradients first to last, so
                // their end is the likeliest to be still in L2.
                let first = (chunks - 1 - ticket) * chunk + t;
                let mut held = [0.0f32; hold * T::VEC];
                for h in 0..hold {
                    let j = first + h * threads;
                    let x = grads.load_vec_or::<{ T::VEC }>(j * T::VEC, j < vectors, 0.0 as T);
                    for k in 0..T::VEC {
                        held[h * T::VEC + k] = x[k] as f32;
                    }
                }
                for h in 0..hold {
                    let j = first + h * threads;
                    if j < vectors {
                        let mut x = [0.0 as T; T::VEC];
                        for k in 0..T::VEC {
                            x[k] = (held[h * T::VEC + k] * scale) as T;
                        }
                        grads.store_vec::<{ T::VEC }>(j * T::VEC, x);
                    }
                }
            }
        }
        // The last `n % T::VEC` elements, by the first block.
        let i = vectors * T::VEC + block_idx().x * threads + t;
        if i < n {
            grads[i] = ((grads[i] as f32) * scale) as T;
        }
    }
}
