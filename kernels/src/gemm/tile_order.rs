//! The order persistent GEMM blocks take their tiles in, as a `#[device]` helper shared by
//! the Hopper kernels.

use kernel_macros::device;

/// Tile `tile`'s row and column among `tiles_m × tiles_n`, numbered in groups of eight row
/// tiles walked a column at a time: the 132 or so tiles resident at once then share
/// a few row blocks of A and column blocks of B, which stay in L2, rather than one row block
/// and every column block of B.
#[device(crate = crate::lang)]
fn tile_at(tile: u32, tiles_m: u32, tiles_n: u32) -> [u32; 2] {
    let per_group = 8 * tiles_n;
    let first = tile / per_group * 8;
    let rows = min(tiles_m - first, 8);
    let within = tile % per_group;
    [first + within % rows, within / rows]
}
