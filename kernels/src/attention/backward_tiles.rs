//! `#[device]` helpers the backward kernels share: the tile loads into padded shared rows, and the one product both kernels recompute
//! (a warp's 16 rows against 32 rows of another tile, over the head dimension).
//!
//! Shared tiles hold a token's head (`D` elements) per row, `D / 2 + 4` words apart: the
//! extra 16 bytes put the eight rows one `ldmatrix` reads in distinct banks. Every kernel
//! that calls these helpers names its head size `D` and its warps `W`.

use kernel_macros::device;

/// Starts the `cp.async` loads of `rows` heads of `x` (row `r` at element `first + r · ld`)
/// into the shared tile at word `dst`, by the block's `W` warps; rows from `valid` on are
/// zero-filled without being read.
#[device(crate = crate::lang)]
fn load_heads<T, const D: u32, const W: u32>(
    words: &mut [u32],
    dst: u32,
    x: &[T],
    first: u32,
    ld: u32,
    rows: u32,
    valid: u32,
    tid: u32,
) {
    let pitch = D / 2 + 4;
    let per_row = D / 8;
    let count = rows * per_row / (32 * W);
    for c in 0..count {
        let chunk = tid + c * 32 * W;
        let row = chunk / per_row;
        let col = (chunk % per_row) * 8;
        cp_async_16_or(
            words,
            dst + row * pitch + col / 2,
            x,
            first + row * ld + col,
            row < valid,
        );
    }
}

/// `acc[j·4 + r]`: the warp's 16 rows of tile A (its `ldmatrix` row address `a_lane`) times
/// the 32 rows of tile B (`b_lane`), transposed, over the head dimension, as four m16n8
/// accumulator tiles (`j`: 8 columns of B's rows each).
#[device(crate = crate::lang)]
fn rows_by_rows<M, const D: u32>(words: &mut [u32], a_lane: u32, b_lane: u32) -> [f32; 16] {
    let pitch = D / 2 + 4;
    let mut acc = [0.0f32; 16];
    for ks in 0..D / 16 {
        let a = ldmatrix_x4(words, a_lane + ks * 8);
        for nj in 0..2 {
            // Registers (0, 1) are columns 16·nj.., (2, 3) columns 16·nj + 8...
            let b = ldmatrix_x4(words, b_lane + nj * 16 * pitch + ks * 8);
            for half in 0..2 {
                let at = (nj * 2 + half) * 4;
                let d = M::mma(
                    a,
                    [b[half * 2], b[half * 2 + 1]],
                    [acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
                );
                for q in 0..4 {
                    acc[at + q] = d[q];
                }
            }
        }
    }
    acc
}

/// The A operand of k step `ks` (16 columns) from four m16n8 accumulator tiles of 32
/// columns: the layout an accumulator pair already has, rounded to the element type.
#[device(crate = crate::lang)]
fn operand_of<M>(x: [f32; 16], ks: u32) -> [u32; 4] {
    let lo = ks * 8;
    [
        M::pack(x[lo + 1], x[lo]),
        M::pack(x[lo + 3], x[lo + 2]),
        M::pack(x[lo + 5], x[lo + 4]),
        M::pack(x[lo + 7], x[lo + 6]),
    ]
}
