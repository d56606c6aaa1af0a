//! The tensor-core GEMV of `gemv_mma_kernel.rs` with its weights staged through shared
//! memory: each warp keeps a ring of stages, each the bytes of the warp's next block of 256
//! weights of its 8 or 16 rows, copied by `cp.async` two blocks ahead of the one it decodes,
//! across tiles too. No register holds a load in flight, so a thread needs fewer registers
//! and an SM holds more warps to hide the decode's latencies, while more bytes are in flight
//! than a warp's registers could hold. The products, the layout of the operands and the
//! reduction are those of `gemv_mma_kernel.rs`, so both give the same bits.

use kernel_macros::{device, kernel};

/// Bytes of a stage's row: the 16-byte chunks that cover a block of the row (a Q6_K block
/// is not 16-byte aligned, so its window is one chunk longer), padded so that the lanes'
/// reads of their rows fall in distinct banks.
#[device(crate = crate::lang)]
pub(crate) fn stage_row_bytes() -> u32 {
    if F == 0 {
        288
    } else if F == 1 {
        160
    } else {
        272
    }
}

/// The 16-byte chunks a stage's row copies: a Q8_0 unit's 272 bytes, a Q4_K block's 144, a
/// Q6_K block's 210 through a window that starts at the 16-byte boundary below it.
#[device(crate = crate::lang)]
pub(crate) fn row_chunks() -> u32 {
    if F == 0 {
        17
    } else if F == 1 {
        9
    } else {
        15
    }
}

/// The weight row of row `r` of tile `tile_i` (`r < 8·NT`): with `GLU`, rows `r < 8` of the
/// gate and `r ≥ 8` the same rows of the up stacked under it (`n` rows each); rows past the
/// end copy the last, whose products are not stored.
#[device(crate = crate::lang)]
pub(crate) fn copy_row(tile_i: u32, r: u32, n: u32) -> u32 {
    if GLU == 1 {
        min(tile_i * 8 + r % 8, n - 1) + (r / 8) * n
    } else {
        min(tile_i * 8 * NT + r, n - 1)
    }
}

/// Starts the copies of this lane's share of a row's block into the ring: the block starts
/// at byte `src` of `w`, its window goes to byte `at` of `ring`. `q` is the lane's place
/// among the `lanes` lanes that copy the row.
#[device(crate = crate::lang)]
pub(crate) fn stage_row(ring: &mut [u32], w: &[u32], at: u32, src: u32, q: u32, lanes: u32) {
    let chunks = row_chunks();
    let per_lane = (chunks + lanes - 1) / lanes;
    let from = src - src % 16;
    for i in 0..8 {
        if i < per_lane {
            let j = q * per_lane + i;
            if j < chunks {
                cp_async_16(ring, (at + 16 * j) / 4, w, (from + 16 * j) / 4);
            }
        }
    }
}

/// `gguf_gemv_mma`'s contract, with `STAGES · 8 · 8·NT · stage_row_bytes()` bytes of dynamic
/// shared memory (`STAGES` 3, or 2 for Q6_K with two tiles).
#[kernel(
    crate = crate::lang,
    instances(
        <f32, f32, 0, 1, 0>,
        <bf16, bf16, 0, 1, 0>,
        <f32, f32, 1, 1, 0>,
        <f32, f32, 1, 2, 0>,
        <f32, f32, 2, 1, 0>,
        <bf16, bf16, 1, 1, 0>,
        <bf16, bf16, 1, 2, 0>,
        <bf16, bf16, 2, 1, 0>,
        <bf16, bf16, 2, 2, 0>,
        <f32, f32, 1, 2, 1>,
        <bf16, bf16, 1, 2, 1>,
        <bf16, bf16, 2, 2, 1>,
        <bf16, f32, 0, 1, 0>,
        <bf16, f32, 1, 1, 0>,
        <bf16, f32, 1, 2, 0>,
        <bf16, f32, 2, 1, 0>,
        <bf16, f32, 2, 2, 0>
    ),
    block = 256,
    min_blocks = if F == 2 && NT == 2 || GLU == 1 && X::VEC == 4 { 2 } else { 3 }
)]
#[allow(clippy::too_many_arguments)]
pub fn gguf_gemv_staged<X: Element, T: Element, const F: u32, const NT: u32, const GLU: u32>(
    w: &[u32],
    x: &[u32],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    m: u32,
    n: u32,
    n0: u32,
    n1: u32,
    k: u32,
    row_bytes: u32,
) {
    griddep_wait();
    let ring = dynamic_shared::<u32>();
    let lane = lane_id();
    let warp = thread_idx().x / 32;
    let g = lane / 4;
    let t = lane % 4;
    let bytes = block_bytes();
    let mut width = 8 * NT;
    if GLU == 1 {
        width = 8;
    }
    let blocks = k / 256;
    let stages = if F == 2 && NT == 2 { 2u32 } else { 3u32 };
    let row_stride = stage_row_bytes();
    let stage_bytes = 8 * NT * row_stride;
    let ring_at = warp * stages * stage_bytes;
    // The row of the stage this lane copies, and its place among the lanes copying it.
    let lanes = 4 / NT;
    let copy_r = lane / lanes;
    let copy_q = lane % lanes;
    let copy_at = ring_at + copy_r * row_stride;

    // The copy cursor runs `stages - 1` blocks ahead of the decode, over the same sequence:
    // blocks `warp`, `warp + 8`, ... of tile `block_idx().x`, then of every `grid_dim().x`-th
    // tile after it.
    let mut next_tile = block_idx().x;
    let mut next_c = warp;
    let mut copy_base = copy_row(next_tile, copy_r, n) * row_bytes;
    let mut copy_stage = 0u32;
    for _stage in 0..stages - 1 {
        if next_tile * width < n && next_c < blocks {
            stage_row(
                ring,
                w,
                copy_at + copy_stage * stage_bytes,
                copy_base + bytes * next_c,
                copy_q,
                lanes,
            );
        }
        cp_async_commit();
        copy_stage += 1;
        next_c += 8;
        if next_c >= blocks {
            next_c = warp;
            next_tile += grid_dim().x;
            copy_base = copy_row(next_tile, copy_r, n) * row_bytes;
        }
    }

    let mut tile_i = block_idx().x;
    // Byte offsets of the lane's own weight rows in the current tile (for Q6_K, whose
    // blocks' offsets in their windows follow them).
    let mut base = [0u32; NT];
    for j in 0..NT {
        base[j] = min(tile_i * width + 8 * j + g, n - 1) * row_bytes;
        if GLU == 1 {
            base[j] = (min(tile_i * width + g, n - 1) + j * n) * row_bytes;
        }
    }
    let x0 = min(g, m - 1) * k;
    let x1 = min(g + 8, m - 1) * k;
    let mut read_stage = 0u32;
    let part = shared_array::<f32, { 1024 * NT }>();
    let mut more = tile_i * width < n;
    while more {
        let mut acc = [0.0f32; 4 * NT];
        let mut c0 = warp;
        while c0 < blocks {
            // Every lane is done reading the stage the next copy overwrites.
            sync_warp();
            if next_tile * width < n && next_c < blocks {
                stage_row(
                    ring,
                    w,
                    copy_at + copy_stage * stage_bytes,
                    copy_base + bytes * next_c,
                    copy_q,
                    lanes,
                );
            }
            cp_async_commit();
            copy_stage += 1;
            if copy_stage == stages {
                copy_stage = 0;
            }
            next_c += 8;
            if next_c >= blocks {
                next_c = warp;
                next_tile += grid_dim().x;
                copy_base = copy_row(next_tile, copy_r, n) * row_bytes;
            }
            // This block's stage has landed, for every lane.
            cp_async_wait(stages - 1);
            sync_warp();
            let mut words = [0u32; 18 * NT];
            let mut shared = [0u32; 8 * NT];
            for j in 0..NT {
                let mut at = ring_at + read_stage * stage_bytes + (g + 8 * j) * row_stride;
                if F == 2 {
                    at += (base[j] + bytes * c0) % 16;
                }
                let v = load_block(ring, at, t);
                let a = align_block(v, at);
                let p = block_scales(a, t);
                for i in 0..18 {
                    words[18 * j + i] = a[i];
                }
                for i in 0..8 {
                    shared[8 * j + i] = p[i];
                }
            }
            read_stage += 1;
            if read_stage == stages {
                read_stage = 0;
            }
            let xa0 = x_word(x0 + 256 * c0 + 8 * t);
            let xb0 = x_word(x1 + 256 * c0 + 8 * t);
            for s in 0..8 {
                // Group s: weights 32s..32s + 32 of the block, the lane's eight of each of
                // its rows.
                let mut b = [0u32; 4 * NT];
                for j in 0..NT {
                    let mut a = [0u32; 18];
                    for i in 0..18 {
                        a[i] = words[18 * j + i];
                    }
                    let mut p = [0u32; 8];
                    for i in 0..8 {
                        p[i] = shared[8 * j + i];
                    }
                    let o = group_operand(a, s, group_scales(p, s));
                    for i in 0..4 {
                        b[4 * j + i] = o[i];
                    }
                }
                let xa = x_pairs(x, xa0 + x_word(32 * s));
                if NT == 2 {
                    // The weights are `A`, the rows of `x` the `n`.
                    let lo = [b[0], b[4], b[1], b[5]];
                    let hi = [b[2], b[6], b[3], b[7]];
                    let prev = [acc[0], acc[1], acc[2], acc[3]];
                    let d0 = mma_m16n8k16_bf16(lo, [xa[0], xa[1]], prev);
                    let d1 = mma_m16n8k16_bf16(hi, [xa[2], xa[3]], d0);
                    for i in 0..4 {
                        acc[i] = d1[i];
                    }
                    if m > 8 {
                        let xb = x_pairs(x, xb0 + x_word(32 * s));
                        let prev = [acc[4], acc[5], acc[6], acc[7]];
                        let e0 = mma_m16n8k16_bf16(lo, [xb[0], xb[1]], prev);
                        let e1 = mma_m16n8k16_bf16(hi, [xb[2], xb[3]], e0);
                        for i in 0..4 {
                            acc[4 + i] = e1[i];
                        }
                    }
                } else {
                    // The rows of `x` are `A`; with at most 8, its upper half repeats the
                    // lower.
                    let mut xb = [0u32; 4];
                    if m > 8 {
                        let v = x_pairs(x, xb0 + x_word(32 * s));
                        for i in 0..4 {
                            xb[i] = v[i];
                        }
                    } else {
                        for i in 0..4 {
                            xb[i] = xa[i];
                        }
                    }
                    let prev = [acc[0], acc[1], acc[2], acc[3]];
                    let d0 = mma_m16n8k16_bf16([xa[0], xb[0], xa[1], xb[1]], [b[0], b[1]], prev);
                    let d1 = mma_m16n8k16_bf16([xa[2], xb[2], xa[3], xb[3]], [b[2], b[3]], d0);
                    for i in 0..4 {
                        acc[i] = d1[i];
                    }
                }
            }
            c0 += 8;
        }
        let tile = tile_i * width;
        let next_i = tile_i + grid_dim().x;
        if next_i * width >= n {
            griddep_launch_dependents();
        }
        for i in 0..4 * NT {
            part[(i * 8 + warp) * 32 + lane] = acc[i];
        }
        sync_threads();
        // Warp j < NT sums four elements over the eight warps, in warp order. With two
        // tiles, element i of a lane is weight row g + 8·(i / 2) and row 2t + i % 2 of `x`
        // (plus 8 for warp 1); with one, row g + 8·(i / 2) of `x` and weight row 2t + i % 2.
        if warp < NT {
            let mut total = [0.0f32; 4];
            for i in 0..4 {
                let e = 4 * warp + i;
                total[i] = part[e * 256 + lane];
                for v in 1..8 {
                    total[i] += part[(e * 8 + v) * 32 + lane];
                }
            }
            if GLU == 1 {
                // Elements i and i + 2 are the gate's and the up's row g for the same row
                // of `x`.
                let col = tile + g;
                for i in 0..2 {
                    let row = 8 * warp + 2 * t + i;
                    if row < m && col < n {
                        y0[row * n + col] = swiglu_value(total[i], total[i + 2]) as T;
                    }
                }
            } else {
                for i in 0..4 {
                    let mut row = 8 * warp + 2 * t + i % 2;
                    let mut col = tile + g + 8 * (i / 2);
                    if NT == 1 {
                        row = g + 8 * (i / 2);
                        col = tile + 2 * t + i % 2;
                    }
                    if row < m && col < n {
                        let v = total[i] as T;
                        if col < n0 {
                            y0[row * n0 + col] = v;
                        } else if col < n0 + n1 {
                            y1[row * n1 + col - n0] = v;
                        } else {
                            let n2 = n - n0 - n1;
                            y2[row * n2 + col - n0 - n1] = v;
                        }
                    }
                }
            }
        }
        more = next_i * width < n;
        if more {
            sync_threads();
            tile_i = next_i;
            for j in 0..NT {
                base[j] = min(tile_i * width + 8 * j + g, n - 1) * row_bytes;
                if GLU == 1 {
                    base[j] = (min(tile_i * width + g, n - 1) + j * n) * row_bytes;
                }
            }
        }
    }
}
