//! `#[device]` decoders shared by the dequantize and GEMV kernels. Both see a weight row as
//! chunks of 32 weights, the work of one thread: a Q8_0 block, or one eighth of a K-format
//! block. A chunk's weights are `1 << F` runs of `32 >> F` consecutive elements, run `r`
//! starting `32·r` after the chunk's first element, so activations are read as whole vectors.
//! The helpers read the calling kernel's format parameter `F` (0 Q8_0, 1 Q4_K, 2 Q6_K), and
//! do ggml's reference arithmetic step for step, so the results match it bit for bit.

use kernel_macros::device;

/// `q` (below 2²³) as an f32, exactly: `q` in the mantissa of 2²³, minus 2²³. An integer
/// conversion issues at a quarter of the rate of this OR and add, and the decode GEMVs
/// convert one per weight.
#[device(crate = crate::lang)]
pub(crate) fn small_u32_to_f32(q: u32) -> f32 {
    from_bits(0x4b00_0000 | q) - 8_388_608.0
}

/// Byte `j` (0..4) of `v`, as the int8 it holds, converted to f32 exactly without an integer
/// conversion (see [`small_u32_to_f32`]): the byte with its sign bit flipped is the value
/// plus 128.
#[device(crate = crate::lang)]
pub(crate) fn int8_to_f32(v: u32, j: u32) -> f32 {
    from_bits(0x4b00_0000 | (byte_of(v, j) ^ 0x80)) - 8_388_736.0
}

/// Byte `j` (0..4) of `v`.
#[device(crate = crate::lang)]
pub(crate) fn byte_of(v: u32, j: u32) -> u32 {
    (v >> (8 * j)) & 0xff
}

/// The three words holding the 8 bytes at the 2-byte-aligned byte offset `at` of `w`.
#[device(crate = crate::lang)]
pub(crate) fn window_at(w: &[u32], at: u32) -> [u32; 3] {
    let i = at / 4;
    [w[i], w[i + 1], w[i + 2]]
}

/// The 8 bytes at byte `at % 4` of the three words `v` (from [`window_at`]), as two words.
#[device(crate = crate::lang)]
pub(crate) fn align_window(v: [u32; 3], at: u32) -> [u32; 2] {
    let s = (at % 4) * 8;
    let r = 32 - s;
    [
        if s == 0 {
            v[0]
        } else {
            (v[0] >> s) | (v[1] << r)
        },
        if s == 0 {
            v[1]
        } else {
            (v[1] >> s) | (v[2] << r)
        },
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

/// The words chunk `t` of the block at byte `b` of `w` decodes from, loaded before any is
/// used, so that a thread can have several chunks' loads in flight before decoding the first.
#[device(crate = crate::lang)]
// Thirteen words: the most any format needs (Q6_K).
pub(crate) fn load_chunk(w: &[u32], b: u32, t: u32) -> [u32; 13] {
    let mut v = [0u32; 13];
    if F == 0 {
        // 34-byte blocks: every other one starts halfway into a word.
        let i = b / 4;
        for j in 0..9 {
            v[j] = w[i + j];
        }
    }
    if F == 1 {
        let head = w.load_vec::<4>(b / 4);
        let q = w.load_vec::<4>(b / 4 + 4 + 4 * t);
        for j in 0..4 {
            v[j] = head[j];
            v[4 + j] = q[j];
        }
    }
    if F == 2 {
        let h = t / 4;
        let p = t % 4;
        let ql0 = window_at(w, b + 64 * h + 8 * p);
        let ql1 = window_at(w, b + 64 * h + 32 + 8 * p);
        let qh = window_at(w, b + 128 + 32 * h + 8 * p);
        let sc = window_at(w, b + 192 + 8 * h);
        for j in 0..3 {
            v[j] = ql0[j];
            v[3 + j] = ql1[j];
            v[6 + j] = qh[j];
            v[9 + j] = sc[j];
        }
        // `d` is two bytes at an even offset: it never straddles a word.
        v[12] = w[(b + 208) / 4];
    }
    v
}

/// The 32 weights of chunk `t` of the block at byte `b`, in run order, from its words `v`
/// ([`load_chunk`]).
#[device(crate = crate::lang)]
pub(crate) fn decode_loaded(v: [u32; 13], b: u32, t: u32) -> [f32; 32] {
    let mut out = [0.0f32; 32];
    if F == 0 {
        let odd = (b % 4) != 0;
        let d = f16_bits_to_f32(if odd { v[0] >> 16 } else { v[0] });
        for j in 0..8 {
            let q = if odd {
                v[j + 1]
            } else {
                (v[j] >> 16) | (v[j + 1] << 16)
            };
            for e in 0..4 {
                out[4 * j + e] = int8_to_f32(q, e) * d;
            }
        }
    }
    if F == 1 {
        let d = f16_bits_to_f32(v[0]);
        let dmin = f16_bits_to_f32(v[0] >> 16);
        let j = t / 2;
        let lo = scale_min_k4(v[1], v[2], v[3], 2 * j);
        let hi = scale_min_k4(v[1], v[2], v[3], 2 * j + 1);
        let d1 = d * small_u32_to_f32(lo[0]);
        let m1 = dmin * small_u32_to_f32(lo[1]);
        let d2 = d * small_u32_to_f32(hi[0]);
        let m2 = dmin * small_u32_to_f32(hi[1]);
        for c in 0..4 {
            for e in 0..4 {
                let q = byte_of(v[4 + c], e);
                out[4 * c + e] = d1 * small_u32_to_f32(q & 15) - m1;
                out[16 + 4 * c + e] = d2 * small_u32_to_f32(q >> 4) - m2;
            }
        }
    }
    if F == 2 {
        let h = t / 4;
        let p = t % 4;
        let ql0 = align_window([v[0], v[1], v[2]], b + 64 * h + 8 * p);
        let ql1 = align_window([v[3], v[4], v[5]], b + 64 * h + 32 + 8 * p);
        let qh = align_window([v[6], v[7], v[8]], b + 128 + 32 * h + 8 * p);
        let sc = align_window([v[9], v[10], v[11]], b + 192 + 8 * h);
        let d = f16_bits_to_f32(if (b + 208) % 4 != 0 {
            v[12] >> 16
        } else {
            v[12]
        });
        let s = p / 2;
        let ds0 = d * int8_to_f32(sc[0], s);
        let ds1 = d * int8_to_f32(sc[0], s + 2);
        let ds2 = d * int8_to_f32(sc[1], s);
        let ds3 = d * int8_to_f32(sc[1], s + 2);
        for l in 0..8 {
            let a = byte_of(ql0[l / 4], l % 4);
            let c = byte_of(ql1[l / 4], l % 4);
            let hb = byte_of(qh[l / 4], l % 4);
            // The 6-bit values less 32, as f32 (see `small_u32_to_f32`).
            let q1 = from_bits(0x4b00_0000 | (a & 15) | ((hb & 3) << 4)) - 8_388_640.0;
            let q2 = from_bits(0x4b00_0000 | (c & 15) | (((hb >> 2) & 3) << 4)) - 8_388_640.0;
            let q3 = from_bits(0x4b00_0000 | (a >> 4) | (((hb >> 4) & 3) << 4)) - 8_388_640.0;
            let q4 = from_bits(0x4b00_0000 | (c >> 4) | ((hb >> 6) << 4)) - 8_388_640.0;
            out[l] = ds0 * q1;
            out[8 + l] = ds1 * q2;
            out[16 + l] = ds2 * q3;
            out[24 + l] = ds3 * q4;
        }
    }
    out
}

/// The 32 weights of chunk `t` of the block at byte `b` of `w`, in run order.
#[device(crate = crate::lang)]
pub(crate) fn decode_chunk(w: &[u32], b: u32, t: u32) -> [f32; 32] {
    decode_loaded(load_chunk(w, b, t), b, t)
}
