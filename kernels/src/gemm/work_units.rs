//! How the persistent Hopper GEMM's blocks divide the work, as `#[device]` helpers: whole
//! tiles (or split-k's k-ranges of them) dealt out `grid` apart, or, under stream-K, the full
//! waves' whole tiles followed by one contiguous run of the last wave's `tiles × slabs`
//! iterations per block, cut where tiles end.

use kernel_macros::device;

/// Where block `block`'s run of stream-K iterations starts: `block · work / grid`, so the
/// runs differ in length by one iteration at most.
#[device(crate = crate::lang)]
fn stream_k_start(block: u32, work: u32, grid: u32) -> u32 {
    (block as u64 * work as u64 / grid as u64) as u32
}

/// Where block `block`'s stretch of the `rest` stream-K iterations after `dp_end` starts, the
/// stretches dealt among the first `cut_grid` blocks (those past it have empty ones).
#[device(crate = crate::lang)]
fn stretch_start(block: u32, dp_end: u32, rest: u32, cut_grid: u32) -> u32 {
    dp_end + stream_k_start(min(block, cut_grid), rest, cut_grid)
}

/// The unit of work at cursor `cur`, as `[tile, k-range, first slab, end slab, next
/// cursor]`. Under stream-K the cursor is an iteration (`tile · slabs + slab`): below
/// `dp_end` it names a whole tile of the full waves, dealt out `grid` apart and followed by
/// the block's stretch at `sk_from`; from there a unit runs to the end of its tile or of the
/// stretch (`run_end`). Otherwise the cursor is a work item (tile `cur % tiles` over k-range
/// `cur / tiles`, `per` slabs deep) and the next one is `grid` further.
#[device(crate = crate::lang)]
fn work_unit(
    cur: u32,
    stream_k: bool,
    tiles: u32,
    slabs: u32,
    per: u32,
    run_end: u32,
    grid: u32,
    dp_end: u32,
    sk_from: u32,
) -> [u32; 5] {
    let mut unit = [0u32; 5];
    if stream_k {
        let tile = cur / slabs;
        if cur < dp_end {
            let next = cur + grid * slabs;
            unit = [
                tile,
                0,
                0,
                slabs,
                if next < dp_end { next } else { sk_from },
            ];
        } else {
            let end = min(slabs, run_end - tile * slabs);
            unit = [tile, 0, cur - tile * slabs, end, tile * slabs + end];
        }
    } else {
        let range = cur / tiles;
        let first = min(range * per, slabs);
        unit = [
            cur % tiles,
            range,
            first,
            min(first + per, slabs),
            cur + grid,
        ];
    }
    unit
}
