//! The casts in `#[kernel]`: one source for every (source, destination) pair of f32, bf16 and
//! f16, a same-type pair being a copy.
//!
//! A block moves tiles of `256 · 2 · S::VEC` elements: 32 bytes of `src` a thread, all loaded
//! before any is stored. A thread's elements are pieces of `P = min(S::VEC, D::VEC)`, one
//! access on each side (16 bytes on the wider one), strided by the block, so that each access
//! of a warp covers one contiguous span of both buffers. The last partial tile goes one element
//! a thread.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;

/// Elements a block moves per tile: 32 bytes of the source a thread.
pub(crate) const fn tile_elems(src_bytes: u32) -> u32 {
    THREADS * 32 / src_bytes
}

/// `dst[i] = src[i] as D` for `i < n`: narrowing rounds to nearest even, NaN and ±∞ stay, and
/// values beyond the destination's range become ±∞. Grid: any number of blocks of 256.
#[kernel(crate = crate::lang, block = 256,
         instances(S in [f32, bf16, f16], D in [f32, bf16, f16],
                   P in [if S::VEC < D::VEC { S::VEC } else { D::VEC }]))]
pub fn cast<S: Element, D: Element, const P: u32>(src: &[S], dst: &mut [D], n: u32) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let t = thread_idx().x;
    let tiles = n / (256 * 2 * S::VEC);
    let mut b = block_idx().x;
    while b < tiles {
        let base = b * (256 * 2 * S::VEC) + t * P;
        let mut v = [0.0 as S; 2 * S::VEC];
        for j in 0..(2 * S::VEC / P) {
            let u = src.load_vec::<P>(base + j * (256 * P));
            for k in 0..P {
                v[j * P + k] = u[k];
            }
        }
        // Converted beside the store, where two bf16 halves round as one packed pair.
        for j in 0..(2 * S::VEC / P) {
            let mut o = [0.0 as D; P];
            for k in 0..P {
                o[k] = v[j * P + k] as D;
            }
            dst.store_vec::<P>(base + j * (256 * P), o);
        }
        b += grid_dim().x;
    }
    let mut i = tiles * (256 * 2 * S::VEC) + block_idx().x * 256 + t;
    while i < n {
        dst[i] = src[i] as D;
        i += 256 * grid_dim().x;
    }
}
