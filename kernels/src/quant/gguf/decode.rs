//! `#[device]` decoders shared by the dequantize and GEMV kernels. Both see a weight row as
//! chunks of 32 weights, the work of one thread: a Q8_0 block, or one eighth of a K-format
//! block. A chunk's weights are `1 << F` runs of `32 >> F` consecutive elements, run `r`
//! starting `32·r` after the chunk's first element, so activations are read as whole vectors.
//! The helpers read the calling kernel's format parameter `F` (0 Q8_0, 1 Q4_K, 2 Q6_K), and
//! do ggml's reference arithmetic step for step, so the results match it bit for bit.

use kernel_macros::device;

/// The f16 whose bits are the low half of `h`, widened to f32 exactly.
#[device(crate = crate::lang)]
pub(crate) fn half_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000) << 16;
    let e = (h >> 10) & 31;
    let m = h & 1023;
    let normal = from_bits(sign | ((e + 112) << 23) | (m << 13));
    let special = from_bits(sign | 0x7f80_0000 | (m << 13));
    // A subnormal half is m · 2⁻²⁴, exact in f32.
    let tiny = (m as f32) * 5.960_464_477_539_062_5e-8;
    let sub = if sign != 0 { -tiny } else { tiny };
    let big = if e == 31 { special } else { normal };
    if e == 0 {
        sub
    } else {
        big
    }
}

/// Byte `j` (0..4) of `v`.
#[device(crate = crate::lang)]
pub(crate) fn byte_of(v: u32, j: u32) -> u32 {
    (v >> (8 * j)) & 0xff
}

/// Byte `j` (0..4) of `v`, as the int8 it holds.
#[device(crate = crate::lang)]
pub(crate) fn int8_of(v: u32, j: u32) -> i32 {
    ((v << (24 - 8 * j)) as i32) >> 24
}

/// The 8 bytes at the 2-byte-aligned byte offset `at` of `w`, as two words.
#[device(crate = crate::lang)]
pub(crate) fn two_words_at(w: &[u32], at: u32) -> [u32; 2] {
    let i = at / 4;
    let s = (at % 4) * 8;
    let a = w[i];
    let b = w[i + 1];
    let c = w[i + 2];
    let r = 32 - s;
    [
        if s == 0 { a } else { (a >> s) | (b << r) },
        if s == 0 { b } else { (b >> s) | (c << r) },
    ]
}

/// Q4_K sub-block `j`'s 6-bit scale and min from the 12 packed bytes `s0, s1, s2` (ggml's
/// `get_scale_min_k4`).
#[device(crate = crate::lang)]
pub(crate) fn scale_min_k4(s0: u32, s1: u32, s2: u32, j: u32) -> [u32; 2] {
    let k = j & 3;
    let a = byte_of(s0, k);
    let b = byte_of(s1, k);
    let c = byte_of(s2, k);
    let low = j < 4;
    [
        if low {
            a & 63
        } else {
            (c & 15) | ((a >> 6) << 4)
        },
        if low {
            b & 63
        } else {
            (c >> 4) | ((b >> 6) << 4)
        },
    ]
}

/// Where chunk `c` of a row lives: its block's byte offset in the row, and the chunk's index
/// in that block (0 for Q8_0).
#[device(crate = crate::lang)]
pub(crate) fn chunk_at(c: u32) -> [u32; 2] {
    let mut at = [34 * c, 0];
    if F == 1 {
        at[0] = 144 * (c / 8);
        at[1] = c % 8;
    }
    if F == 2 {
        at[0] = 210 * (c / 8);
        at[1] = c % 8;
    }
    at
}

/// The first element of chunk `c` of a row, counted from the row's start.
#[device(crate = crate::lang)]
pub(crate) fn chunk_first(c: u32) -> u32 {
    let t = c % 8;
    let mut first = 32 * c;
    if F == 1 {
        first = 256 * (c / 8) + 64 * (t / 2) + 16 * (t % 2);
    }
    if F == 2 {
        first = 256 * (c / 8) + 128 * (t / 4) + 8 * (t % 4);
    }
    first
}

/// The 32 weights of chunk `t` of the block at byte `b` of `w`, in run order.
#[device(crate = crate::lang)]
pub(crate) fn decode_chunk(w: &[u32], b: u32, t: u32) -> [f32; 32] {
    let mut out = [0.0f32; 32];
    if F == 0 {
        // 34-byte blocks: every other one starts halfway into a word.
        let i = b / 4;
        let odd = (b % 4) != 0;
        let mut v = [0u32; 9];
        for j in 0..9 {
            v[j] = w[i + j];
        }
        let d = half_to_f32(if odd { v[0] >> 16 } else { v[0] & 0xffff });
        for j in 0..8 {
            let q = if odd {
                v[j + 1]
            } else {
                (v[j] >> 16) | (v[j + 1] << 16)
            };
            for e in 0..4 {
                out[4 * j + e] = (int8_of(q, e) as f32) * d;
            }
        }
    }
    if F == 1 {
        let head = w.load_vec::<4>(b / 4);
        let d = half_to_f32(head[0] & 0xffff);
        let dmin = half_to_f32(head[0] >> 16);
        let j = t / 2;
        let lo = scale_min_k4(head[1], head[2], head[3], 2 * j);
        let hi = scale_min_k4(head[1], head[2], head[3], 2 * j + 1);
        let d1 = d * (lo[0] as f32);
        let m1 = dmin * (lo[1] as f32);
        let d2 = d * (hi[0] as f32);
        let m2 = dmin * (hi[1] as f32);
        let q = w.load_vec::<4>(b / 4 + 4 + 4 * t);
        for c in 0..4 {
            for e in 0..4 {
                let v = byte_of(q[c], e);
                out[4 * c + e] = d1 * ((v & 15) as f32) - m1;
                out[16 + 4 * c + e] = d2 * ((v >> 4) as f32) - m2;
            }
        }
    }
    if F == 2 {
        let h = t / 4;
        let p = t % 4;
        let ql0 = two_words_at(w, b + 64 * h + 8 * p);
        let ql1 = two_words_at(w, b + 64 * h + 32 + 8 * p);
        let qh = two_words_at(w, b + 128 + 32 * h + 8 * p);
        let sc = two_words_at(w, b + 192 + 8 * h);
        let dw = two_words_at(w, b + 208);
        let d = half_to_f32(dw[0] & 0xffff);
        let s = p / 2;
        let ds0 = d * (int8_of(sc[0], s) as f32);
        let ds1 = d * (int8_of(sc[0], s + 2) as f32);
        let ds2 = d * (int8_of(sc[1], s) as f32);
        let ds3 = d * (int8_of(sc[1], s + 2) as f32);
        for l in 0..8 {
            let a = byte_of(ql0[l / 4], l % 4);
            let c = byte_of(ql1[l / 4], l % 4);
            let hb = byte_of(qh[l / 4], l % 4);
            let q1 = ((a & 15) | ((hb & 3) << 4)) as i32 - 32;
            let q2 = ((c & 15) | (((hb >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((a >> 4) | (((hb >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((c >> 4) | ((hb >> 6) << 4)) as i32 - 32;
            out[l] = ds0 * (q1 as f32);
            out[8 + l] = ds1 * (q2 as f32);
            out[16 + l] = ds2 * (q3 as f32);
            out[24 + l] = ds3 * (q4 as f32);
        }
    }
    out
}
