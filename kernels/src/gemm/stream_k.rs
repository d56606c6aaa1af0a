//! Stream-K for the Hopper TMA GEMM, where whole tiles would leave much of their last wave's
//! SMs idle (a weight gradient of 4864 × 896 is 152 tiles of 128 × 256: on 132 SMs a second
//! wave of 20). The full waves run as whole tiles, their blocks walking k in step so that
//! they share their slabs of A and B in L2; then each of `grid` blocks runs one contiguous
//! run of the last wave's `tiles × slabs` k-slab iterations, cut where tiles end
//! (`work_units.rs`), so every SM does the same work. Where the last wave would give each
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

/// The stream-K grid [`super::gemm`] runs a planned problem with on `sms` SMs: the TMA
/// kernel on its own operands, one batch, whole tiles (no split-k) and [`stream_k_grid`]'s
/// rule.
pub(crate) fn planned_stream_k(plan: &Plan, shape: &GemmShape, sms: usize) -> Option<usize> {
    if plan.launch != Launch::Tma || shape.batch > 1 {
        return None;
    }
    let tiles = shape.m.div_ceil(TILE_M as usize) * shape.n.div_ceil(TILE_N as usize);
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
}
