//! Stream-K for the Hopper TMA GEMM, where whole tiles would leave much of their last wave's
//! SMs idle (a weight gradient of 4864 × 896 is 152 tiles of 128 × 256: on 132 SMs a second
//! wave of 20). The full waves run as whole tiles, their blocks walking k in step so that
//! they share their slabs of A and B in L2; then the last wave's `tiles × slabs` k-slab
//! iterations are dealt in contiguous runs, cut where tiles end (`work_units.rs`), to as many
//! blocks as cut each of those tiles in at most four ([`cuts_per_tile`]), so those SMs do the
//! same work and no tile's owner adds more than three parts. Where the last wave would give each
//! block fewer than four slabs (a lone tile past the full waves), every tile is cut instead.
//! A block whose run starts inside a tile stores that part's raw f32 sums in its slot of the
//! partials and raises its warps' counters; the block that starts the tile waits for them and
//! adds the parts in block order before the tile's epilogue. The cut
//! points depend only on the shape and the grid, so reruns on one device are bit-identical.
//!
//! Every block is resident at once (one per SM at most), and a block waits only for later
//! blocks' first parts, which they store before waiting on anything, so no wait can close a
//! cycle. The counters go 0 → 1 → 0 within a launch: a workspace's stay zeroed between calls.

use super::layout::GemmShape;
use super::select::{Launch, Plan};
use super::tma_wgmma_kernel::{slab_depth, TILE_M, TILE_N};

/// f32 partials a block's slot holds: one whole tile.
pub(crate) const PARTIALS_PER_BLOCK: usize = (TILE_M * TILE_N) as usize;
/// Counters a block raises: one per consumer warp.
pub(crate) const COUNTERS_PER_BLOCK: usize = 8;

/// The grid of a stream-K launch of `tiles` tiles, `slabs` deep, on `sms` SMs, where whole
/// tiles would leave more than an eighth of their waves' SM time idle; `None` (whole tiles)
/// where they fill the device well enough, where they are at most one wave (the kernel would
/// cut every tile, and adding the parts costs more than the idle SMs: split-k takes the
/// skinniest), or where the iteration count outgrows the kernel's 32-bit arithmetic. The
/// kernel runs the full waves as whole tiles and cuts only the last wave's, unless those give
/// each block fewer than four slabs (then it cuts every tile).
pub(crate) fn stream_k_grid(tiles: usize, slabs: usize, sms: usize) -> Option<usize> {
    let sms = sms.max(1);
    if tiles <= sms || slabs < 2 {
        return None;
    }
    let waves = tiles.div_ceil(sms);
    let idle = waves * sms - tiles;
    let work = tiles.checked_mul(slabs)?;
    (idle * 8 > waves * sms && work.checked_mul(sms)? < 1 << 32).then_some(sms)
}

/// The most blocks one of the last wave's tiles is cut among, for `tiles` tiles on `grid`
/// blocks: as many as the grid gives each such tile, but no more than four. Every cut past
/// the first is a part the tile's owner adds through its registers after its own run; a
/// 152-tile problem on 132 SMs (20 last-wave tiles) cut six or seven ways measured slower
/// than three or four, and 190 tiles (58) faster two ways. `0` where the tiles fill their
/// waves (the kernel then has no last wave to cut).
pub(crate) fn cuts_per_tile(tiles: usize, grid: usize) -> u32 {
    let last = tiles % grid.max(1);
    if last == 0 {
        return 0;
    }
    (grid / last).clamp(1, MAX_CUTS) as u32
}

/// The most blocks [`cuts_per_tile`] cuts a tile among.
const MAX_CUTS: usize = 4;

/// The 128 × 256 tiles of one batch of `shape`.
pub(crate) fn shape_tiles(shape: &GemmShape) -> usize {
    shape.m.div_ceil(TILE_M as usize) * shape.n.div_ceil(TILE_N as usize)
}

/// The stream-K grid [`super::gemm`] runs a planned problem with on `sms` SMs: the TMA
/// kernel on its own operands, one batch, whole tiles (no split-k) and [`stream_k_grid`]'s
/// rule.
pub(crate) fn planned_stream_k(plan: &Plan, shape: &GemmShape, sms: usize) -> Option<usize> {
    if plan.launch != Launch::Tma || shape.batch > 1 {
        return None;
    }
    let tiles = shape_tiles(shape);
    let slabs = shape.k.div_ceil(slab_depth(plan.problem.0) as usize);
    stream_k_grid(tiles, slabs, sms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The weight gradients of a 4864 × 896 layer on 132 SMs (152 and 133 tiles) run
    /// stream-K; squares and the forward (512 and 608 tiles: 3% and 8% idle) keep whole
    /// tiles, as do problems of at most one wave.
    #[test]
    fn stream_k_takes_problems_whose_last_wave_is_mostly_idle() {
        assert_eq!(stream_k_grid(152, 64, 132), Some(132));
        assert_eq!(stream_k_grid(133, 64, 132), Some(132));
        assert_eq!(stream_k_grid(304, 64, 132), Some(132));
        assert_eq!(stream_k_grid(132, 64, 132), None);
        assert_eq!(stream_k_grid(114, 64, 132), None);
        assert_eq!(stream_k_grid(512, 64, 132), None);
        assert_eq!(stream_k_grid(608, 14, 132), None);
        assert_eq!(stream_k_grid(66, 64, 132), None);
        assert_eq!(stream_k_grid(4, 1, 3), None);
        assert_eq!(stream_k_grid(6, 1, 5), None);
        assert_eq!(stream_k_grid(6, 2, 5), Some(5));
        assert_eq!(stream_k_grid(3, 2, 2), Some(2));
    }

    /// On 132 SMs: 20 last-wave tiles (152) are cut four ways, 40 (304) three, 58 (190) two;
    /// 100 last-wave tiles run whole, one a block, and full waves have nothing to cut.
    #[test]
    fn last_wave_tiles_are_cut_among_as_many_blocks_as_the_grid_gives_them_up_to_four() {
        assert_eq!(cuts_per_tile(152, 132), 4);
        assert_eq!(cuts_per_tile(304, 132), 3);
        assert_eq!(cuts_per_tile(190, 132), 2);
        assert_eq!(cuts_per_tile(232, 132), 1);
        assert_eq!(cuts_per_tile(264, 132), 0);
        assert_eq!(cuts_per_tile(6, 5), 4);
        assert_eq!(cuts_per_tile(4, 3), 3);
        assert_eq!(cuts_per_tile(7, 0), 0);
    }
}
