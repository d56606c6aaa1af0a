//! Gradient clipping in `#[kernel]`: per-block sums of squares, one block that adds them in a
//! fixed order into the norm and the clip scale, and the in-place scaling (which writes
//! nothing when the scale is 1).
//!
//! The two passes over the gradients run a grid of at most `WORKSPACE_LEN` blocks, so each
//! thread loops, issuing the loads of several 16-byte vectors before using any so that enough
//! bytes are in flight. A grid that size keeps the scaling cheap when there is nothing to scale:
//! every block reads the scale once and returns (a grid of one vector a thread spent more time
//! reading the scale than the sum of squares took to read the gradients).

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
/// sees the norm.
#[kernel(crate = crate::lang, block = 1024)]
pub fn grad_norm_finish(partial: &[f32], norm_scale: &mut [f32], parts: u32, max_norm: f32) {
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
    }
}

/// `grads[..n] *= norm_scale[1]` where the scale is below 1; otherwise (1, or NaN) nothing is
/// written.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]))]
pub fn grad_scale<T: Element>(grads: &mut [T], norm_scale: &[f32], n: u32) {
    let scale = norm_scale[1];
    if scale < 1.0 {
        let stride = block_dim().x * grid_dim().x;
        let first = block_idx().x * block_dim().x + thread_idx().x;
        let vectors = n / T::VEC;
        // Two vectors a thread between loads and stores measured best with the capped grid.
        let hold = 2;
        let mut j = first;
        while j < vectors {
            let mut held = [0.0f32; hold * T::VEC];
            let mut at = [0u32; hold];
            let mut ok = [false; hold];
            for h in 0..hold {
                let jh = j + h * stride;
                ok[h] = jh < vectors;
                // Last to first: the sum of squares read the gradients first to last, so
                // their end is the likeliest to be still in L2.
                at[h] = (vectors - 1 - min(jh, vectors - 1)) * T::VEC;
                let x = grads.load_vec_or::<{ T::VEC }>(at[h], ok[h], 0.0 as T);
                for k in 0..T::VEC {
                    held[h * T::VEC + k] = x[k] as f32;
                }
            }
            for h in 0..hold {
                if ok[h] {
                    let mut x = [0.0 as T; T::VEC];
                    for k in 0..T::VEC {
                        x[k] = (held[h * T::VEC + k] * scale) as T;
                    }
                    grads.store_vec::<{ T::VEC }>(at[h], x);
                }
            }
            j += hold * stride;
        }
        let mut i = vectors * T::VEC + first;
        while i < n {
            grads[i] = ((grads[i] as f32) * scale) as T;
            i += stride;
        }
    }
}
