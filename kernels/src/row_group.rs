//! `#[device]` helpers shared by the `#[kernel]` row-wise kernels (norms, softmax,
//! cross-entropy): where a thread's row group starts, and sums and maxima over that group or
//! over the whole block. A group is a warp (`CTA = 0`, several rows per block) or the whole
//! block (`CTA = 1`, one row per block); the helpers read the calling kernel's `CTA`.

use kernel_macros::device;

/// Butterfly sum over the warp: every lane ends with the total.
#[device(crate = crate::lang)]
pub(crate) fn warp_sum(v: f32) -> f32 {
    let mut s = v;
    for d in [16, 8, 4, 2, 1] {
        s += shfl_xor(s, d);
    }
    s
}

/// Butterfly maximum over the warp: every lane ends with it.
#[device(crate = crate::lang)]
pub(crate) fn warp_max(v: f32) -> f32 {
    let mut m = v;
    for d in [16, 8, 4, 2, 1] {
        m = max(m, shfl_xor(m, d));
    }
    m
}

/// `[lane, group, first row, row step]`: this thread's index in its group, the group's
/// threads, the first row the group owns, and the stride to its next one.
#[device(crate = crate::lang)]
pub(crate) fn row_group() -> [u32; 4] {
    let t = thread_idx().x;
    if CTA == 1 {
        [t, block_dim().x, block_idx().x, grid_dim().x]
    } else {
        let groups = block_dim().x / 32;
        [
            t % 32,
            32,
            block_idx().x * groups + t / 32,
            grid_dim().x * groups,
        ]
    }
}

/// The sum of `v` over the block, in every thread of it, in a fixed order: `t` is the
/// thread's index in the block and `threads` the block's size, a multiple of 32 (the caller's
/// own registers, which the helper would otherwise read again and keep alive beside them).
/// Every thread of the block must call it (it holds barriers).
#[device(crate = crate::lang)]
pub(crate) fn block_sum(v: f32, t: u32, threads: u32) -> f32 {
    let mut s = warp_sum(v);
    let partial = shared_array::<f32, 32>();
    if t % 32 == 0 {
        partial[t / 32] = s;
    }
    sync_threads();
    // Every lane reads a slot some warp wrote, and keeps it only if it is its own: a select
    // rather than a branch around the read.
    let w = t % 32;
    let p = partial[min(w, threads / 32 - 1)];
    s = warp_sum(if w < threads / 32 { p } else { 0.0 });
    // The next call writes `partial` again.
    sync_threads();
    s
}

/// The sum of `v` over the group, in every thread of it (`lane` and `group` as
/// [`row_group`] gives them). With `CTA = 1` every thread of the block must call it.
#[device(crate = crate::lang)]
pub(crate) fn group_sum(v: f32, lane: u32, group: u32) -> f32 {
    if CTA == 1 {
        block_sum(v, lane, group)
    } else {
        warp_sum(v)
    }
}

/// The warp's sums of two values, by halves: across 16 lanes each lane sends the value it gives
/// up and adds the one it keeps, then plain butterfly steps finish. Lane `l` ends with sum
/// `l / 16`. Both partners of a step add the same two values, so every lane holding a sum holds
/// the same bits.
#[device(crate = crate::lang)]
pub(crate) fn warp_sums2(v: [f32; 2], lane: u32) -> f32 {
    let up = (lane & 16) != 0;
    let keep = if up { v[1] } else { v[0] };
    let send = if up { v[0] } else { v[1] };
    let mut s = keep + shfl_xor(send, 16);
    for d in [8, 4, 2, 1] {
        s += shfl_xor(s, d);
    }
    s
}

/// The warp's sums of four values, by halves (see [`warp_sums2`]): pairs across 16 lanes, then
/// single values across 8, so four sums cost 7 shuffles rather than 20. Lane `l` ends with sum
/// `l / 8`.
#[device(crate = crate::lang)]
pub(crate) fn warp_sums4(v: [f32; 4], lane: u32) -> f32 {
    let up = (lane & 16) != 0;
    let keep0 = if up { v[2] } else { v[0] };
    let send0 = if up { v[0] } else { v[2] };
    let keep1 = if up { v[3] } else { v[1] };
    let send1 = if up { v[1] } else { v[3] };
    let p0 = keep0 + shfl_xor(send0, 16);
    let p1 = keep1 + shfl_xor(send1, 16);
    let up8 = (lane & 8) != 0;
    let keep = if up8 { p1 } else { p0 };
    let send = if up8 { p0 } else { p1 };
    let mut s = keep + shfl_xor(send, 8);
    for d in [4, 2, 1] {
        s += shfl_xor(s, d);
    }
    s
}

/// The block's sums of two values, in every thread of it, in a fixed order, with one barrier:
/// consecutive calls (`round` counting them) alternate between two shared buffers, so a call
/// never writes the buffer that a slower warp may still be reading from the call before (to
/// reach a third call, every warp has passed the second call's barrier). Otherwise the same
/// contract as [`block_sum`].
#[device(crate = crate::lang)]
pub(crate) fn block_sums2(v: [f32; 2], t: u32, threads: u32, round: u32) -> [f32; 2] {
    let lane = t % 32;
    let s = warp_sums2(v, lane);
    // Sum `j` of warp `w` at `j·32 + w`, in this round's half.
    let partial = shared_array::<f32, 128>();
    let half = (round % 2) * 64;
    if lane % 16 == 0 {
        partial[half + (lane / 16) * 32 + t / 32] = s;
    }
    sync_threads();
    let warps = threads / 32;
    let w = min(lane, warps - 1);
    let p0 = partial[half + w];
    let p1 = partial[half + 32 + w];
    let mine = lane < warps;
    let total = warp_sums2(
        [if mine { p0 } else { 0.0 }, if mine { p1 } else { 0.0 }],
        lane,
    );
    [shfl_idx(total, 0), shfl_idx(total, 16)]
}

/// The block's sums of four values, in every thread of it, in a fixed order: one pair of
/// barriers for all four. The same contract as [`block_sum`].
#[device(crate = crate::lang)]
pub(crate) fn block_sums4(v: [f32; 4], t: u32, threads: u32) -> [f32; 4] {
    let lane = t % 32;
    let s = warp_sums4(v, lane);
    let partial = shared_array::<f32, 128>();
    if lane % 8 == 0 {
        partial[(lane / 8) * 32 + t / 32] = s;
    }
    sync_threads();
    let warps = threads / 32;
    let w = min(lane, warps - 1);
    let p0 = partial[w];
    let p1 = partial[32 + w];
    let p2 = partial[64 + w];
    let p3 = partial[96 + w];
    let mine = lane < warps;
    let total = warp_sums4(
        [
            if mine { p0 } else { 0.0 },
            if mine { p1 } else { 0.0 },
            if mine { p2 } else { 0.0 },
            if mine { p3 } else { 0.0 },
        ],
        lane,
    );
    sync_threads();
    [
        shfl_idx(total, 0),
        shfl_idx(total, 8),
        shfl_idx(total, 16),
        shfl_idx(total, 24),
    ]
}

/// The maximum of `v` over the block, in every thread of it; the same contract as
/// [`block_sum`].
#[device(crate = crate::lang)]
pub(crate) fn block_max(v: f32, t: u32, threads: u32) -> f32 {
    let mut m = warp_max(v);
    let partial = shared_array::<f32, 32>();
    if t % 32 == 0 {
        partial[t / 32] = m;
    }
    sync_threads();
    let w = t % 32;
    let p = partial[min(w, threads / 32 - 1)];
    m = warp_max(if w < threads / 32 {
        p
    } else {
        f32::NEG_INFINITY
    });
    sync_threads();
    m
}

/// The maximum of `v` over the group, in every thread of it; the same contract as
/// [`group_sum`].
#[device(crate = crate::lang)]
pub(crate) fn group_max(v: f32, lane: u32, group: u32) -> f32 {
    if CTA == 1 {
        block_max(v, lane, group)
    } else {
        warp_max(v)
    }
}

/// `m`, or 0 where it is −∞ (a row whose every entry is masked), so that `t − m` stays a
/// number.
#[device(crate = crate::lang)]
pub(crate) fn finite_or_zero(m: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        0.0
    } else {
        m
    }
}

/// How many passes of `step` chunks, from chunk `first`, a thread makes over a row of
/// `chunks`: ⌈(chunks − first) / step⌉, or none where `first` is past the row. The overflow
/// loops that re-read a row last to first count down from it.
#[device(crate = crate::lang)]
pub(crate) fn overflow_passes(first: u32, chunks: u32, step: u32) -> u32 {
    if first < chunks {
        (chunks - first + step - 1) / step
    } else {
        0
    }
}

/// One step of an online softmax in base 2: the running maximum `m` and `s = Σ 2^(t − m)` of
/// the scores read so far, after also folding in the 32 scores `u`, as `[m', s']`.
#[device(crate = crate::lang)]
pub(crate) fn online_fold(m: f32, s: f32, u: [f32; 32]) -> [f32; 2] {
    let mut next = m;
    for i in 0..32 {
        next = max(next, u[i]);
    }
    let top = finite_or_zero(next);
    let mut sum = s * (m - top).ex2_approx_ftz();
    for i in 0..32 {
        sum += (u[i] - top).ex2_approx_ftz();
    }
    [next, sum]
}
