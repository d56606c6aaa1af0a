//! `#[device]` helpers for the tensor-core GEMV (`gemv_mma_kernel.rs`): a weight row's codes
//! turned into the bf16 `B` operand of `mma.m16n8k16` in registers, and the activations into
//! its `A` operand. A lane `(g, t)` of a warp (`g = lane / 4`, `t = lane % 4`) holds eight
//! consecutive weights `8t..8t + 8` of a sub-block of 32 in weight row `g`; the first four
//! feed one `mma`, the last four the next. The reduction's order inside a sub-block is free,
//! so `x` is read in the same order, four bf16 pairs from one 16-byte load.

use kernel_macros::device;

/// Two 4-bit codes of `q` (bytes below 16; byte `lo` into the low half, byte `lo + 1` into
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
/// word, rows of f32 one.
#[device(crate = crate::lang)]
pub(crate) fn x_word(e: u32) -> u32 {
    if T::VEC == 8 {
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
    if T::VEC == 8 {
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
    let d = half_to_f32(h0 & 0xffff);
    let dmin = half_to_f32(h0 >> 16);
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
