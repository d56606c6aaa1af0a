//! RoPE in `#[kernel]` for heads whose pairs cannot be read in 16-byte accesses (a rotary half
//! of 17 elements, say), forward and backward.
//!
//! A block takes one token row (`heads · head_dim` elements) at a time: it copies the row into
//! shared memory in the widest accesses the row allows (`V`: 16 bytes where every token row
//! starts aligned, else one element), rotates each pair there, then copies the row out the same
//! way. So global memory sees only whole coalesced rows, whatever the head dimension, and the
//! elements past the rotary dimensions pass through without a second read. The sines and
//! cosines come from [`rotation`](super::rotate_kernel), so results equal the other RoPE
//! kernels' bit for bit.

use kernel_macros::kernel;

/// `x, y: tokens × heads × head_dim`, `positions`: one per token. `half` = rotary_dim / 2;
/// `sign` is 1 forward, −1 backward. Launched with `heads · head_dim` elements of dynamic
/// shared memory.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], INTERLEAVED in [0, 1], V in [1, T::VEC]),
    block = 128
)]
pub fn rope_staged<T: Element, const INTERLEAVED: u32, const V: u32>(
    x: &[T],
    positions: &[u32],
    y: &mut [T],
    tokens: u32,
    heads: u32,
    head_dim: u32,
    half: u32,
    exponent: f32,
    sign: f32,
) {
    // Threads per block, and the row accesses a thread issues before it stores any.
    const THREADS: u32 = 128;
    const BATCH: u32 = 4;
    let row = dynamic_shared::<T>();
    let t = thread_idx().x;
    let row_elems = heads * head_dim;
    let accesses = row_elems / V;
    let mut token = block_idx().x;
    while token < tokens {
        let base = token * row_elems;
        let mut j = t;
        while j < accesses {
            let mut v = [0.0 as T; BATCH * V];
            for u in 0..BATCH {
                let at = j + u * THREADS;
                let w = x.load_vec_or::<V>(base + at * V, at < accesses, 0.0 as T);
                for k in 0..V {
                    v[u * V + k] = w[k];
                }
            }
            for u in 0..BATCH {
                let at = j + u * THREADS;
                if at < accesses {
                    let mut w = [0.0 as T; V];
                    for k in 0..V {
                        w[k] = v[u * V + k];
                    }
                    row.store_vec::<V>(at * V, w);
                }
            }
            j += BATCH * THREADS;
        }
        sync_threads();
        let pos = positions[token] as f32;
        // Thread `t` takes rotation `i` (one sine and cosine) for every `groups`-th head from
        // head `g`; with half ≥ THREADS each thread takes every THREADS-th rotation instead.
        let groups = max(THREADS / half, 1);
        let g = t / half;
        let mut i = t - g * half;
        if g < groups {
            while i < half {
                let cs = rotation(pos, i, exponent, sign);
                let mut h = g;
                while h < heads {
                    // NeoX pairs `(d[i], d[i + half])`; interleaved `(d[2i], d[2i + 1])`.
                    let mut a = h * head_dim + i;
                    let mut b = a + half;
                    if INTERLEAVED == 1 {
                        a = h * head_dim + 2 * i;
                        b = a + 1;
                    }
                    let x0 = row[a] as f32;
                    let x1 = row[b] as f32;
                    row[a] = x0.mul_add(cs[0], -(x1 * cs[1])) as T;
                    row[b] = x1.mul_add(cs[0], x0 * cs[1]) as T;
                    h += groups;
                }
                i += THREADS;
            }
        }
        sync_threads();
        let mut j = t;
        while j < accesses {
            y.store_vec::<V>(base + j * V, row.load_vec::<V>(j * V));
            j += THREADS;
        }
        // The next token writes the row again.
        sync_threads();
        token += grid_dim().x;
    }
}
