//! The `#[device]` helpers every NF4 kernel shares: a code's value, a value's code, and a
//! block's absmax under either scale layout.

use kernel_macros::device;

/// `NF4_CODE[c]` for a 4-bit code, as a tree of selects on its bits (no memory access).
#[device(crate = crate::lang)]
fn nf4_value(c: u32) -> f32 {
    let b0 = c & 1 != 0;
    let p0 = if b0 { -0.6961928f32 } else { -1.0f32 };
    let p1 = if b0 { -0.3949175f32 } else { -0.52507305f32 };
    let p2 = if b0 { -0.18477343f32 } else { -0.28444138f32 };
    let p3 = if b0 { 0.0f32 } else { -0.091050036f32 };
    let p4 = if b0 { 0.1609302f32 } else { 0.0795803f32 };
    let p5 = if b0 { 0.33791524f32 } else { 0.2461123f32 };
    let p6 = if b0 { 0.562617f32 } else { 0.44070983f32 };
    let p7 = if b0 { 1.0f32 } else { 0.72295684f32 };
    let b1 = c & 2 != 0;
    let q0 = if b1 { p1 } else { p0 };
    let q1 = if b1 { p3 } else { p2 };
    let q2 = if b1 { p5 } else { p4 };
    let q3 = if b1 { p7 } else { p6 };
    let b2 = c & 4 != 0;
    let r0 = if b2 { q1 } else { q0 };
    let r1 = if b2 { q3 } else { q2 };
    if c & 8 != 0 {
        r1
    } else {
        r0
    }
}

/// The code of `v` (a value already divided by its absmax): how many thresholds it exceeds.
#[device(crate = crate::lang)]
fn nf4_code(v: f32) -> u32 {
    let mut c = 0u32;
    c += if v > -0.8480964f32 { 1u32 } else { 0u32 };
    c += if v > -0.6106329f32 { 1u32 } else { 0u32 };
    c += if v > -0.45999527f32 { 1u32 } else { 0u32 };
    c += if v > -0.33967942f32 { 1u32 } else { 0u32 };
    c += if v > -0.2346074f32 { 1u32 } else { 0u32 };
    c += if v > -0.13791174f32 { 1u32 } else { 0u32 };
    c += if v > -0.045525018f32 { 1u32 } else { 0u32 };
    c += if v > 0.03979015f32 { 1u32 } else { 0u32 };
    c += if v > 0.12025525f32 { 1u32 } else { 0u32 };
    c += if v > 0.20352125f32 { 1u32 } else { 0u32 };
    c += if v > 0.29201376f32 { 1u32 } else { 0u32 };
    c += if v > 0.38931254f32 { 1u32 } else { 0u32 };
    c += if v > 0.50166345f32 { 1u32 } else { 0u32 };
    c += if v > 0.6427869f32 { 1u32 } else { 0u32 };
    c += if v > 0.86147845f32 { 1u32 } else { 0u32 };
    c
}

/// The absmax of block `b`: `absmax[b]`, or with `double` set,
/// `code2[q] · scale2[b / 256] + offset` with `q` byte `b` of `qabs` (little-endian words).
#[device(crate = crate::lang)]
fn block_absmax(
    absmax: &[f32],
    qabs: &[u32],
    code2: &[f32],
    scale2: &[f32],
    offset: f32,
    double: u32,
    b: u32,
) -> f32 {
    let mut a = 0.0f32;
    if double != 0 {
        let q = (qabs[b >> 2] >> ((b & 3) * 8)) & 255;
        let s = code2[q] * scale2[b >> 8];
        a = s + offset;
    } else {
        a = absmax[b];
    }
    a
}

/// Element `e` (0..8) of a code word: byte `e / 2`, the even element in the high nibble.
#[device(crate = crate::lang)]
fn word_code(word: u32, e: u32) -> u32 {
    (word >> ((e >> 1) * 8 + 4 - (e & 1) * 4)) & 15
}
