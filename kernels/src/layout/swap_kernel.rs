//! Swapping the two outer axes of an `[A, B, D]` tensor in `#[kernel]`: `y[b][a][:] =
//! x[a][b][:]`, elements moved as they are.
//!
//! The work is the flat list of `x`'s chunks (`W` elements, 16 bytes where `D` allows), read in
//! order, so that each access of a warp covers one contiguous span of `x`, and of `y` too as
//! long as rows are at least as wide as the span. A block takes tiles of [`HELD`] × 256 chunks;
//! each thread issues the loads of its [`HELD`] chunks, 256 apart, before storing any of them.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;
/// Chunks a thread holds between its loads and its stores (the kernel's 4): 64 bytes of
/// 16-byte accesses in flight.
pub(crate) const HELD: u32 = 4;

/// `x: outer × inner × d`, `y: inner × outer × d`; `W` divides `d`. Grid: any number of blocks.
#[kernel(crate = crate::lang, block = 256, instances(T in [f32, bf16], W in [1, T::VEC]))]
pub fn swap_outer<T: Element, const W: u32>(x: &[T], y: &mut [T], outer: u32, inner: u32, d: u32) {
    let t = thread_idx().x;
    let per_row = d / W;
    let total = outer * inner * per_row;
    // `total` is at least 1, and a tile's end may lie past 2³² where `total` is near it.
    let tiles = (total - 1) / (4 * 256) + 1;
    let mut b = block_idx().x;
    while b < tiles {
        let rest = total - b * (4 * 256);
        let mut v = [0.0 as T; 4 * W];
        let mut at = [0u32; 4];
        let mut inside = [false; 4];
        for j in 0..4 {
            let c = b * (4 * 256) + j * 256 + t;
            inside[j] = j * 256 + t < rest;
            let row = c / per_row;
            let col = c - row * per_row;
            let a = row / inner;
            let i = row - a * inner;
            at[j] = (i * outer + a) * d + col * W;
            if W == 1 {
                // One element: read a clamped index rather than predicate the load.
                v[j] = x[min(c, total - 1)];
            } else {
                let u = x.load_vec_or::<W>(c * W, inside[j], 0.0 as T);
                for k in 0..W {
                    v[j * W + k] = u[k];
                }
            }
        }
        for j in 0..4 {
            if inside[j] {
                let mut u = [0.0 as T; W];
                for k in 0..W {
                    u[k] = v[j * W + k];
                }
                y.store_vec::<W>(at[j], u);
            }
        }
        b += grid_dim().x;
    }
}
