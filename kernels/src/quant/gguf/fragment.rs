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

/// The four pairs of `x` at element `e` of a row, as the `A` operand's words: bf16 rows are
/// read as words (`T` bf16, `x` its words), f32 rows rounded to bf16 pairs.
#[device(crate = crate::lang)]
pub(crate) fn x_pairs(x: &[u32], e: u32) -> [u32; 4] {
    let mut p = [0u32; 4];
    if T::VEC == 8 {
        let v = x.load_vec::<4>(e / 2);
        for i in 0..4 {
            p[i] = v[i];
        }
    } else {
        let lo = x.load_vec::<4>(e);
        let hi = x.load_vec::<4>(e + 4);
        for i in 0..2 {
            p[i] = pack_bf16x2(from_bits(lo[2 * i + 1]), from_bits(lo[2 * i]));
            p[2 + i] = pack_bf16x2(from_bits(hi[2 * i + 1]), from_bits(hi[2 * i]));
        }
    }
    p
}

/// The scale pair `(a, a)` and the negated offset pair `(−b, −b)` of Q4_K sub-block `s` from
/// the block's header words `hd` (f16 `d` and `dmin`, then the 12 packed scale bytes): `a`
/// and `b` are ggml's `d·scale` and `dmin·min` in f32, each rounded to bf16.
#[device(crate = crate::lang)]
pub(crate) fn q4k_scale_pairs(hd: [u32; 4], d: f32, dmin: f32, s: u32) -> [u32; 2] {
    let sm = scale_min_k4(hd[1], hd[2], hd[3], s);
    let a = d * small_u32_to_f32(sm[0]);
    let b = dmin * small_u32_to_f32(sm[1]);
    [pack_bf16x2(a, a), pack_bf16x2(-b, -b)]
}
