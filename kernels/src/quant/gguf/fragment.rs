//! `#[device]` helpers for the tensor-core GEMV (`gemv_mma_kernel.rs`): a weight row's codes
//! turned into bf16 words of the `A` operand of `mma.m16n8k16` in registers, and the
//! activations into its `B` operand. A block of 256 weights is eight groups of 32; lane
//! `(g, t)` of a warp (`g = lane / 4`, `t = lane % 4`) holds eight consecutive weights
//! `8t..8t + 8` of a group in each of its weight rows, the first four feeding one `mma` and
//! the last four the next. The reduction's order inside a group is free, so `x` is read in
//! the same order, four bf16 pairs from one 16-byte load.
//!
//! The kernel sees a format (its parameter `F`: 1 Q4_K, 2 Q6_K) through five steps:
//! [`block_bytes`], [`load_block`] (the lane's words of a block, as loaded),
//! [`align_block`] (those words in a fixed layout), [`block_scales`] (per block) and
//! [`group_scales`] with [`group_operand`] (per group of 32).

use kernel_macros::device;

/// Two codes of `q` (bytes below 128; byte `lo` into the low half, byte `lo + 1` into
/// the high half), as the bf16 pair `(u·a − b)` with `ab = (a, a)` and `nb = (−b, −b)`
/// packed: the code goes under bf16's exponent of 128 (`prmt` beside the byte 0x43), 128 is
/// taken off exactly, then one `fma` rounds each weight once.
#[device(crate = crate::lang)]
pub(crate) fn code_pair(q: u32, lo: u32, ab: u32, nb: u32) -> u32 {
    // Selector: byte lo, the constant 0x43 (byte 4), byte lo + 1, 0x43.
    let sel = 0x4040 | lo | ((lo + 1) << 8);
    let v = prmt(q, 0x43, sel);
    // v · (1, 1) + (−128, −128), exact, then the weight.
    fma_bf16x2(fma_bf16x2(v, 0x3f80_3f80, 0xc300_c300), ab, nb)
}

/// The word of `x` holding element `e` (`e` even): rows of bf16 are read two elements a
/// word, rows of f32 one (`X` the calling kernel's activation type).
#[device(crate = crate::lang)]
pub(crate) fn x_word(e: u32) -> u32 {
    if X::VEC == 8 {
        e / 2
    } else {
        e
    }
}

/// The four pairs of `x` from word `i` ([`x_word`] of an element that is a multiple of 8),
/// as the `A` operand's words: bf16 rows as they are, f32 rows rounded to bf16 pairs.
#[device(crate = crate::lang)]
pub(crate) fn x_pairs(x: &[u32], i: u32) -> [u32; 4] {
    let mut p = [0u32; 4];
    if X::VEC == 8 {
        let v = x.load_vec::<4>(i);
        for j in 0..4 {
            p[j] = v[j];
        }
    } else {
        let lo = x.load_vec::<4>(i);
        let hi = x.load_vec::<4>(i + 4);
        for j in 0..2 {
            p[j] = pack_bf16x2(from_bits(lo[2 * j + 1]), from_bits(lo[2 * j]));
            p[2 + j] = pack_bf16x2(from_bits(hi[2 * j + 1]), from_bits(hi[2 * j]));
        }
    }
    p
}

/// The 6-bit scales and mins of a Q4_K block's eight sub-blocks from its header words `hd`,
/// a byte each: scales of sub-blocks 0–3, of 4–7, then mins of 0–3, of 4–7 (ggml's
/// `get_scale_min_k4` for all eight at once).
#[device(crate = crate::lang)]
pub(crate) fn q4k_scale_bytes(hd: [u32; 4]) -> [u32; 4] {
    let (s0, s1, s2) = (hd[1], hd[2], hd[3]);
    [
        s0 & 0x3f3f_3f3f,
        (s2 & 0x0f0f_0f0f) | ((s0 >> 2) & 0x3030_3030),
        s1 & 0x3f3f_3f3f,
        ((s2 >> 4) & 0x0f0f_0f0f) | ((s1 >> 2) & 0x3030_3030),
    ]
}

/// A Q4_K block's super-scales from its first header word (f16 `d` low, `dmin` high) as
/// broadcast bf16 pairs, for [`q4k_scale_pairs`]: `(d, d)`, `−128·(d, d)`, `−(dmin, dmin)`
/// and `128·(dmin, dmin)`, `d` and `dmin` rounded to bf16 (the products by 128 are exact).
#[device(crate = crate::lang)]
pub(crate) fn q4k_super_pairs(h0: u32) -> [u32; 4] {
    let d = f16_bits_to_f32(h0);
    let dmin = f16_bits_to_f32(h0 >> 16);
    let dd = pack_bf16x2(d, d);
    let nm = pack_bf16x2(-dmin, -dmin);
    // (−128, −128) and (−0, −0) as bf16x2.
    [
        dd,
        fma_bf16x2(dd, 0xc300_c300, 0x8000_8000),
        nm,
        fma_bf16x2(nm, 0xc300_c300, 0x8000_8000),
    ]
}

/// The scale pair `(a, a)` and negated offset pair `(−b, −b)` of Q4_K sub-block `s`, from
/// [`q4k_scale_bytes`] and [`q4k_super_pairs`]: `a = sc·d` and `b = m·dmin`, each one `fma`
/// of the 6-bit value placed under bf16's exponent of 128, rounded once.
#[device(crate = crate::lang)]
pub(crate) fn q4k_scale_pairs(sm: [u32; 4], sp: [u32; 4], s: u32) -> [u32; 2] {
    let i = s % 4;
    let sel = 0x4040 | i | (i << 8);
    let sc = prmt(if s < 4 { sm[0] } else { sm[1] }, 0x43, sel);
    let mn = prmt(if s < 4 { sm[2] } else { sm[3] }, 0x43, sel);
    [fma_bf16x2(sc, sp[0], sp[1]), fma_bf16x2(mn, sp[2], sp[3])]
}

/// The twelve words of a Q4_K block at word `b` that lane `t` decodes: the block's header
/// (f16 `d` and `dmin`, then the 12 scale bytes), then for each group of 32 code bytes the
/// lane's 8 (`8t..8t + 8`), two words each.
#[device(crate = crate::lang)]
pub(crate) fn load_q4k_block(w: &[u32], b: u32, t: u32) -> [u32; 12] {
    let mut v = [0u32; 12];
    let hd = w.load_vec::<4>(b);
    for i in 0..4 {
        v[i] = hd[i];
    }
    for q in 0..4 {
        let c = w.load_vec::<2>(b + 4 + 8 * q + 2 * t);
        v[4 + 2 * q] = c[0];
        v[5 + 2 * q] = c[1];
    }
    v
}

/// The 23 words of a Q6_K block at the even byte `b` that lane `t` decodes, through windows
/// of three words for each 8 bytes: the low bits of weights `8t..8t + 8` of the groups
/// 32·r.. (`ql` at `32r + 8t`, r < 4: groups r and r + 2 of a half), their high bits (`qh`
/// at `128 + 32h + 8t`, all four groups of half `h`), then five words over the 16 scales and
/// `d`.
#[device(crate = crate::lang)]
pub(crate) fn load_q6k_block(w: &[u32], b: u32, t: u32) -> [u32; 23] {
    let mut v = [0u32; 23];
    for r in 0..6 {
        let at = if r < 4 { 32 * r } else { 128 + 32 * (r - 4) };
        let q = window_at(w, b + at + 8 * t);
        for i in 0..3 {
            v[3 * r + i] = q[i];
        }
    }
    let i = (b + 192) / 4;
    for j in 0..5 {
        v[18 + j] = w[i + j];
    }
    v
}

/// [`load_q6k_block`]'s words aligned: every field of a block is at the block's offset
/// modulo 4, so one byte selector shifts them all (`prmt`).
#[device(crate = crate::lang)]
pub(crate) fn align_q6k_block(v: [u32; 24], b: u32) -> [u32; 17] {
    let sel = if b % 4 == 0 { 0x3210u32 } else { 0x5432u32 };
    let mut a = [0u32; 17];
    for r in 0..6 {
        a[2 * r] = prmt(v[3 * r], v[3 * r + 1], sel);
        a[2 * r + 1] = prmt(v[3 * r + 1], v[3 * r + 2], sel);
    }
    for j in 0..4 {
        a[12 + j] = prmt(v[18 + j], v[19 + j], sel);
    }
    // `d` is the low half of the fifth aligned word, which needs only bytes of v[22].
    a[16] = prmt(v[22], v[22], sel);
    a
}

/// What lane `t` needs of a Q6_K block's scales, from its aligned scale words `sc` and the
/// word `dw` whose low half is `d`: `d` rounded to bf16 (as f32 bits), then the scale bytes
/// of the lane's sub-block in each group (sub-block `2s + t / 2` of group `s`), groups 0–3 in
/// one word and 4–7 in the next.
#[device(crate = crate::lang)]
pub(crate) fn q6k_lane_scales(sc: [u32; 4], dw: u32, t: u32) -> [u32; 3] {
    let d = f16_bits_to_f32(dw);
    // Bytes 0, 2, 4, 6 of each pair of words, or 1, 3, 5, 7.
    let sel = if t < 2 { 0x6420u32 } else { 0x7531u32 };
    [
        pack_bf16x2(d, d) << 16,
        prmt(sc[0], sc[1], sel),
        prmt(sc[2], sc[3], sel),
    ]
}

/// Group `s`'s `(a, a)` and `(−32a, −32a)` as bf16 pairs from [`q6k_lane_scales`], with
/// `a = d·scale` (exact in f32, then rounded once): the weight `a·(q − 32)` is `q·a − 32a`
/// for the unsigned 6-bit code `q`.
#[device(crate = crate::lang)]
pub(crate) fn q6k_scale_pairs(ls: [u32; 3], s: u32) -> [u32; 2] {
    let a = from_bits(ls[0]) * int8_to_f32(ls[1 + s / 4], s % 4);
    let ab = pack_bf16x2(a, a);
    // (−32, −32) and (−0, −0) as bf16x2; the product by 32 is exact.
    [ab, fma_bf16x2(ab, 0xc200_c200, 0x8000_8000)]
}

/// The 22 words of a unit of eight Q8_0 blocks (256 weights) at byte `b` (a multiple of 4)
/// that lane `t` decodes: for each block its codes `8t..8t + 8`, three words from the even
/// blocks (whose codes start 2 bytes into a word) and two from the odd, then the words
/// holding `d` of blocks `2t` (low half) and `2t + 1` (high half), for the row's lanes to
/// share.
#[device(crate = crate::lang)]
pub(crate) fn load_q8_0_unit(w: &[u32], b: u32, t: u32) -> [u32; 22] {
    let mut v = [0u32; 22];
    let u = b / 4;
    for j in 0..4 {
        // Block 2j starts at word u + 17j, its codes 2 bytes in; block 2j + 1's codes start
        // at word u + 17j + 9.
        let even = u + 17 * j + 2 * t;
        for i in 0..3 {
            v[3 * j + i] = w[even + i];
        }
        let odd = u + 17 * j + 9 + 2 * t;
        v[12 + 2 * j] = w[odd];
        v[13 + 2 * j] = w[odd + 1];
    }
    v[20] = w[u + 17 * t];
    v[21] = w[u + 17 * t + 8];
    v
}

/// The `d` of each of a Q8_0 unit's eight blocks as the bf16 pair `(d, d)`, from the words of
/// [`load_q8_0_unit`] that lane `t` of the row holds for blocks `2t` and `2t + 1`.
#[device(crate = crate::lang)]
pub(crate) fn q8_0_scale_pairs(dw: [u32; 2]) -> [u32; 8] {
    let first = lane_id() & 0x1c;
    let mut p = [0u32; 8];
    for s in 0..8 {
        let w = shfl_idx(dw[s % 2], first + s / 2);
        let d = f16_bits_to_f32(if s % 2 == 0 { w } else { w >> 16 });
        p[s] = pack_bf16x2(d, d);
    }
    p
}

/// Two int8 codes of `q` (bytes `lo` and `lo + 1`) times `(d, d)` as a bf16 pair, each
/// rounded once: a code's byte with its sign flipped is the code plus 128, which `prmt`
/// places in the mantissa of 2²³.
#[device(crate = crate::lang)]
pub(crate) fn int8_pair(q: u32, lo: u32, dd: u32) -> u32 {
    let u = q ^ 0x8080_8080;
    // Selector: byte lo (or lo + 1) of u, two zero bytes, then 0x4b, from 0x4b00_0000.
    let a = from_bits(prmt(u, 0x4b00_0000, 0x7440 | lo)) - 8_388_736.0;
    let b = from_bits(prmt(u, 0x4b00_0000, 0x7440 | (lo + 1))) - 8_388_736.0;
    // (−0, −0) as bf16x2: the product alone, rounded once.
    fma_bf16x2(pack_bf16x2(b, a), dd, 0x8000_8000)
}

/// Bytes of a block of 256 weights (for Q8_0, of eight blocks).
#[device(crate = crate::lang)]
pub(crate) fn block_bytes() -> u32 {
    if F == 0 {
        272
    } else if F == 1 {
        144
    } else {
        210
    }
}

/// The words lane `t` reads of the block at byte `b` of `w`, before [`align_block`]: Q8_0's
/// 22 and Q4_K's 12 (`b` is a multiple of 4), Q6_K's 23 (`b` is even: each field through a
/// window of whole words).
#[device(crate = crate::lang)]
pub(crate) fn load_block(w: &[u32], b: u32, t: u32) -> [u32; 24] {
    let mut v = [0u32; 24];
    if F == 0 {
        let q = load_q8_0_unit(w, b, t);
        for i in 0..22 {
            v[i] = q[i];
        }
    } else if F == 1 {
        let q = load_q4k_block(w, b / 4, t);
        for i in 0..12 {
            v[i] = q[i];
        }
    } else {
        let q = load_q6k_block(w, b, t);
        for i in 0..23 {
            v[i] = q[i];
        }
    }
    v
}

/// The words of [`load_block`] for the block at byte `b`, aligned: Q8_0's 16 code words (two
/// a block) and its two `d` words, Q4_K's as loaded, Q6_K's 12 code words, 4 scale words and
/// the word whose low half is `d`.
#[device(crate = crate::lang)]
pub(crate) fn align_block(v: [u32; 24], b: u32) -> [u32; 18] {
    let mut a = [0u32; 18];
    if F == 0 {
        for j in 0..4 {
            a[4 * j] = prmt(v[3 * j], v[3 * j + 1], 0x5432);
            a[4 * j + 1] = prmt(v[3 * j + 1], v[3 * j + 2], 0x5432);
            a[4 * j + 2] = v[12 + 2 * j];
            a[4 * j + 3] = v[13 + 2 * j];
        }
        a[16] = v[20];
        a[17] = v[21];
    } else if F == 1 {
        for i in 0..12 {
            a[i] = v[i];
        }
    } else {
        let q = align_q6k_block(v, b);
        for i in 0..17 {
            a[i] = q[i];
        }
    }
    a
}

/// What a block's groups share, from [`align_block`]'s words: Q8_0's eight `(d, d)` pairs
/// ([`q8_0_scale_pairs`]), Q4_K's scale and min bytes and super-scale pairs
/// ([`q4k_scale_bytes`], [`q4k_super_pairs`]), Q6_K's eight scales of lane `t`
/// ([`q6k_lane_scales`]).
#[device(crate = crate::lang)]
pub(crate) fn block_scales(a: [u32; 18], t: u32) -> [u32; 8] {
    let mut p = [0u32; 8];
    if F == 0 {
        let d = q8_0_scale_pairs([a[16], a[17]]);
        for i in 0..8 {
            p[i] = d[i];
        }
    } else if F == 1 {
        let b = q4k_scale_bytes([a[0], a[1], a[2], a[3]]);
        let s = q4k_super_pairs(a[0]);
        for i in 0..4 {
            p[i] = b[i];
            p[4 + i] = s[i];
        }
    } else {
        let s = q6k_lane_scales([a[12], a[13], a[14], a[15]], a[16], t);
        for i in 0..3 {
            p[i] = s[i];
        }
    }
    p
}

/// Group `s`'s scale pair `(a, a)` and negated offset pair `(−b, −b)`, the weight being
/// `u·a − b` for its unsigned code `u`.
#[device(crate = crate::lang)]
pub(crate) fn group_scales(p: [u32; 8], s: u32) -> [u32; 2] {
    if F == 0 {
        // (−0, −0): Q8_0 has no offset.
        [p[s], 0x8000_8000]
    } else if F == 1 {
        q4k_scale_pairs([p[0], p[1], p[2], p[3]], [p[4], p[5], p[6], p[7]], s)
    } else {
        q6k_scale_pairs([p[0], p[1], p[2]], s)
    }
}

/// [`group_operand`] for the K-quants: the group's code bytes, then [`code_pair`].
#[device(crate = crate::lang)]
pub(crate) fn code_operand(a: [u32; 18], s: u32, sc: [u32; 2]) -> [u32; 4] {
    let mut q = [0u32; 2];
    if F == 1 {
        // Group s: the low nibbles of code bytes 32·(s / 2).., or the high.
        for i in 0..2 {
            q[i] = (a[4 + 2 * (s / 2) + i] >> (4 * (s % 2))) & 0x0f0f_0f0f;
        }
    } else {
        let h = s / 4;
        let j = s % 4;
        for i in 0..2 {
            let low = (a[2 * (2 * h + j % 2) + i] >> (4 * (j / 2))) & 0x0f0f_0f0f;
            let high = ((a[2 * (4 + h) + i] >> (2 * j)) & 0x0303_0303) << 4;
            q[i] = low | high;
        }
    }
    [
        code_pair(q[0], 0, sc[0], sc[1]),
        code_pair(q[0], 2, sc[0], sc[1]),
        code_pair(q[1], 0, sc[0], sc[1]),
        code_pair(q[1], 2, sc[0], sc[1]),
    ]
}

/// One weight row's `A` operand words of group `s` (two for each of the group's two `mma`s) from
/// [`align_block`]'s words and [`group_scales`].
#[device(crate = crate::lang)]
pub(crate) fn group_operand(a: [u32; 18], s: u32, sc: [u32; 2]) -> [u32; 4] {
    if F == 0 {
        [
            int8_pair(a[2 * s], 0, sc[0]),
            int8_pair(a[2 * s], 2, sc[0]),
            int8_pair(a[2 * s + 1], 0, sc[0]),
            int8_pair(a[2 * s + 1], 2, sc[0]),
        ]
    } else {
        code_operand(a, s, sc)
    }
}
