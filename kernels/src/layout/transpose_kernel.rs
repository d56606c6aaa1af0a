//! The 2-D transpose `[R, C] → [C, R]` in `#[kernel]`, through a tile in shared memory.
//!
//! A block of 256 threads moves a tile of 64 rows × `32·V` columns of `x`: each warp reads
//! whole 128-byte row spans of the tile (`V` elements a lane: 4 bytes, a pair of bf16 where
//! both sides are even), all eight of a thread's loads issued before any is written to the tile,
//! then writes 128-byte spans of `y`'s rows from the tile's columns. The tile's rows are padded
//! by one element, so that a warp reading a column touches every bank once. Loads past the
//! matrix read its last row or column instead of being predicated; their stores are skipped.

use kernel_macros::kernel;

/// Rows of `x` a tile holds.
pub(crate) const TILE_ROWS: u32 = 64;
/// Columns of `x` a tile holds, `V` elements a lane.
pub(crate) const fn tile_cols(v: u32) -> u32 {
    32 * v
}

/// `x: rows × cols`, `y: cols × rows`; `V = 2` needs both even. Grid: `⌈cols / 32·V⌉ ×
/// ⌈rows / 64⌉` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(<f32, 1>, <bf16, 1>, <bf16, 2>))]
pub fn transpose<T: Element, const V: u32>(x: &[T], y: &mut [T], rows: u32, cols: u32) {
    let tile = shared_array::<T, { 64 * (32 * V + 1) }>();
    let t = thread_idx().x;
    let lane = t % 32;
    let warp = t / 32;
    let c0 = block_idx().x * (32 * V);
    let r0 = block_idx().y * 64;
    let col = min(c0 + V * lane, cols - V);
    let mut v = [0.0 as T; 8 * V];
    for j in 0..8 {
        let r = min(r0 + warp + 8 * j, rows - 1);
        let u = x.load_vec::<V>(r * cols + col);
        for k in 0..V {
            v[j * V + k] = u[k];
        }
    }
    for j in 0..8 {
        for k in 0..V {
            tile[(warp + 8 * j) * (32 * V + 1) + V * lane + k] = v[j * V + k];
        }
    }
    sync_threads();
    // Each row of `y`'s part of the tile is 64 / V accesses; thread `t` takes accesses `t`,
    // `t + 256`, … of the tile's `32·V` rows.
    for j in 0..8 {
        let a = t + 256 * j;
        let q = a % (64 / V);
        let rr = a / (64 / V);
        let mut u = [0.0 as T; V];
        for k in 0..V {
            u[k] = tile[(V * q + k) * (32 * V + 1) + rr];
        }
        let out_row = c0 + rr;
        let out_col = r0 + V * q;
        if out_row < cols && out_col < rows {
            y.store_vec::<V>(out_row * rows + out_col, u);
        }
    }
}
