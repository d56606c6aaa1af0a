//! The checks every collective makes before anything is queued: lengths against the
//! communicator's size, ranges inside buffers, roots among the ranks.

use crate::error::{Error, Result};
use std::ops::Range;

/// `range` must lie inside a buffer of `len` elements.
pub(crate) fn range_inside(range: &Range<usize>, len: usize) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(Error::SliceRange {
            start: range.start,
            end: range.end,
            len,
        });
    }
    Ok(())
}

/// Reduce-scatter sends `world` blocks of the received length.
pub(crate) fn scatter_lengths(world: usize, send: usize, recv: usize) -> Result<()> {
    let expected = recv.saturating_mul(world);
    if send != expected {
        return Err(Error::CollectiveLength {
            op: "reduce_scatter",
            buffer: "send",
            world,
            expected,
            got: send,
        });
    }
    Ok(())
}

/// All-gather receives `world` blocks of the sent length.
pub(crate) fn gather_lengths(world: usize, send: usize, recv: usize) -> Result<()> {
    let expected = send.saturating_mul(world);
    if recv != expected {
        return Err(Error::CollectiveLength {
            op: "all_gather",
            buffer: "recv",
            world,
            expected,
            got: recv,
        });
    }
    Ok(())
}

/// A rank (a root, or the caller's own) must be below `world`.
pub(crate) fn rank_inside(rank: usize, world: usize) -> Result<()> {
    if rank >= world {
        return Err(Error::CollectiveRank { rank, world });
    }
    Ok(())
}
