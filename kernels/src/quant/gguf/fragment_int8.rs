//! `#[device]` helpers for the int8 tensor-core GEMV (`gemv_q8_mma_kernel.rs`): a weight
//! row's codes fed to `mma.m16n8k32` as they are stored, and the f32 scale and offset of each
//! group of 32 weights. They take the words [`align_block`](super::fragment) leaves, so lane
//! `(g, t)` holds weights `8t..8t + 8` of each group of its rows, as in the bf16 route: the
//! first four are the `k` bytes `4t..` of the product and the last four the bytes `16 + 4t..`,
//! and the activations are read in the same order.

use kernel_macros::device;

/// What a block's groups share, from [`align_block`](super::fragment)'s words: Q4_K's scale
/// and min bytes ([`q4k_scale_bytes`](super::fragment)) and its `d` and `dmin` in f32, as
/// bits; Q6_K's `d` in f32, as bits; Q8_0's groups each have their own `d` (read in
/// [`int8_group_scales`]).
#[device(crate = crate::lang)]
pub(crate) fn int8_block_scales(a: [u32; 18]) -> [u32; 6] {
    let mut p = [0u32; 6];
    if F == 2 {
        p[0] = to_bits(f16_bits_to_f32(a[16]));
    }
    if F == 1 {
        let b = q4k_scale_bytes([a[0], a[1], a[2], a[3]]);
        for i in 0..4 {
            p[i] = b[i];
        }
        p[4] = to_bits(f16_bits_to_f32(a[0]));
        p[5] = to_bits(f16_bits_to_f32(a[0] >> 16));
    }
    p
}

/// Group `s`'s scale `a` and offset `b` in f32, the weight being `a·q − b` for its code `q`:
/// Q8_0's `d` (shared by the lane of the row that loaded it) and 0, Q4_K's `d·sc` and
/// `dmin·m`, each exact in f32 as ggml's dequantization computes them. Q6_K's group holds two
/// runs of 16 with their own int8 scales: those two, as f32 (its `d` is the block's).
#[device(crate = crate::lang)]
pub(crate) fn int8_group_scales(a: [u32; 18], p: [u32; 6], s: u32) -> [f32; 2] {
    let mut r = [0.0f32; 2];
    if F == 2 {
        // Runs 2s and 2s + 1 of the block's sixteen, bytes of the aligned scale words.
        let sw = a[12 + s / 2];
        r[0] = int8_to_f32(sw, 2 * (s % 2));
        r[1] = int8_to_f32(sw, 2 * (s % 2) + 1);
    } else if F == 0 {
        let w = shfl_idx(a[16 + s % 2], (lane_id() & 0x1c) + s / 2);
        r[0] = f16_bits_to_f32(if s % 2 == 0 { w } else { w >> 16 });
    } else {
        let sc = (p[s / 4] >> (8 * (s % 4))) & 0xff;
        let mn = (p[2 + s / 4] >> (8 * (s % 4))) & 0xff;
        r[0] = from_bits(p[4]) * (sc as f32);
        r[1] = from_bits(p[5]) * (mn as f32);
    }
    r
}

/// Group `s`'s eight codes of the lane's row as two words of bytes: Q8_0's int8 codes as
/// stored, Q4_K's nibbles spread to a byte each, Q6_K's 6-bit codes `q` as the int8 `q − 32`.
#[device(crate = crate::lang)]
pub(crate) fn int8_group_codes(a: [u32; 18], s: u32) -> [u32; 2] {
    let mut q = [0u32; 2];
    for i in 0..2 {
        if F == 0 {
            q[i] = a[2 * s + i];
        } else if F == 1 {
            q[i] = (a[4 + 2 * (s / 2) + i] >> (4 * (s % 2))) & 0x0f0f_0f0f;
        } else {
            // Group s = 4h + j: low bits in `ql` word pair 2h + j % 2 (high nibbles for
            // j ≥ 2), high bits in `qh` pair 4 + h, two bits a group.
            let h = s / 4;
            let j = s % 4;
            let low = (a[2 * (2 * h + j % 2) + i] >> (4 * (j / 2))) & 0x0f0f_0f0f;
            let high = ((a[2 * (4 + h) + i] >> (2 * j)) & 0x0303_0303) << 4;
            let u = low | high;
            // Per byte: bit 5 flipped is q − 32 for q ≥ 32 and q + 32 below, where 0xc0 more
            // (0x20 · 6, no carry into the next byte) makes it q − 32 mod 256.
            q[i] = (u ^ 0x2020_2020) | ((!u & 0x2020_2020) * 6);
        }
    }
    q
}

/// Words of one stage of a warp's activations in shared memory: `8·NX` rows of a block's 256
/// int8 values (64 words each), then the same rows' eight `(d, d·Σu)` pairs, 20 words a row
/// (16 used: rows `2t` of a load land in different banks).
#[device(crate = crate::lang)]
pub(crate) fn x_stage_words() -> u32 {
    672 * NX
}

/// Where group `s`'s 32 values of staged row `r` start, in words: the groups of a row are
/// swizzled by the row (`s ^ (r % 8)`), so the 8 rows a load reads fall in different banks.
#[device(crate = crate::lang)]
pub(crate) fn x_word_at(r: u32, s: u32) -> u32 {
    r * 64 + ((s ^ (r & 7)) * 8)
}

/// Starts the warp's copies of block `unit` (256 values a row) of the first `8·NX` rows of
/// the activations into the stage at word `at` of shared memory (rows past `m` repeat row
/// `m − 1`), laid out as [`x_stage_words`] and [`x_word_at`] say.
#[device(crate = crate::lang)]
pub(crate) fn stage_x(
    xbuf: &mut [u32],
    xsbuf: &mut [f32],
    xq: &[u32],
    xs: &[f32],
    at: u32,
    unit: u32,
    m: u32,
    k: u32,
) {
    let lane = lane_id();
    for i in 0..4 * NX {
        // 16 chunks of 16 bytes a row: half of group q / 2.
        let c = lane + 32 * i;
        let r = c / 16;
        let q = c % 16;
        let from = min(r, m - 1) * (k / 4) + 64 * unit + 4 * q;
        cp_async_16(xbuf, at + x_word_at(r, q / 2) + 4 * (q % 2), xq, from);
    }
    for i in 0..NX {
        // 4 chunks a row: two groups' pairs each.
        let c = lane + 32 * i;
        let r = c / 4;
        let q = c % 4;
        let from = 2 * (min(r, m - 1) * (k / 32) + 8 * unit + 2 * q);
        cp_async_16(xsbuf, at + 512 * NX + 20 * r + 4 * q, xs, from);
    }
}
