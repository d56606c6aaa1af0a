//! `#[device]` helpers for the decode GEMV's dot products, which need not repeat ggml's
//! dequantization step for step (the dequantize kernel does that, bit for bit), only its
//! value. Each run of a chunk (see `decode.rs`) has one scale `a` and one offset `c`, so
//! `Σ x·(a·u + c) = a·Σ x·u + c·Σ x` over the run's unsigned codes `u` of `bits` bits. A code
//! becomes the f32 `f = 1 + u/2^bits` by placing it under the exponent of 1.0 (a shift and a
//! logic op, no integer conversion), and `Σ x·u = 2^bits·(Σ x·f − Σ x)`: per weight one FMA,
//! one add and two integer ops, about half of what dequantizing first costs.

use kernel_macros::device;

/// The `bits`-bit field of `word` at bit `pos`, moved to bit `to`, the other bits clear.
#[device(crate = crate::lang)]
pub(crate) fn field_to(word: u32, pos: u32, to: u32, bits: u32) -> u32 {
    let moved = if pos <= to {
        word << (to - pos)
    } else {
        word >> (pos - to)
    };
    moved & (((1u32 << bits) - 1) << to)
}

/// The f32 `1 + u/2^bits` for the `bits`-bit field `u` of `word` at bit `pos`.
#[device(crate = crate::lang)]
pub(crate) fn code_at(word: u32, pos: u32, bits: u32) -> f32 {
    from_bits(field_to(word, pos, 23 - bits, bits) | 0x3f80_0000)
}

/// The 32 codes of chunk `t` of the block at byte `b`, from its words `v` (`load_chunk`), in
/// run order, each as `1 + u/2^bits` with `u` unsigned: Q8_0's int8 plus 128, Q4_K's nibble,
/// Q6_K's 6-bit value.
#[device(crate = crate::lang)]
pub(crate) fn chunk_codes(v: [u32; 13], b: u32, t: u32) -> [f32; 32] {
    let mut f = [0.0f32; 32];
    if F == 0 {
        let odd = (b % 4) != 0;
        for j in 0..8 {
            let q = if odd {
                v[j + 1]
            } else {
                (v[j] >> 16) | (v[j + 1] << 16)
            };
            for e in 0..4 {
                // Flipping the sign bit makes the int8 an unsigned byte plus 128.
                f[4 * j + e] = code_at(q ^ 0x8080_8080, 8 * e, 8);
            }
        }
    }
    if F == 1 {
        for c in 0..4 {
            for e in 0..4 {
                f[4 * c + e] = code_at(v[4 + c], 8 * e, 4);
                f[16 + 4 * c + e] = code_at(v[4 + c], 8 * e + 4, 4);
            }
        }
    }
    if F == 2 {
        let h = t / 4;
        let p = t % 4;
        let ql0 = align_window([v[0], v[1], v[2]], b + 64 * h + 8 * p);
        let ql1 = align_window([v[3], v[4], v[5]], b + 64 * h + 32 + 8 * p);
        let qh = align_window([v[6], v[7], v[8]], b + 128 + 32 * h + 8 * p);
        for l in 0..8 {
            let w = l / 4;
            let at = 8 * (l % 4);
            // Run r: the low four bits from a nibble of ql0 or ql1, the high two from qh.
            let low = [ql0[w], ql1[w], ql0[w], ql1[w]];
            for r in 0..4 {
                let bits =
                    field_to(low[r], at + 4 * (r / 2), 17, 4) | field_to(qh[w], at + 2 * r, 21, 2);
                f[8 * r + l] = from_bits(bits | 0x3f80_0000);
            }
        }
    }
    f
}

/// Per run of chunk `t` (one run for Q8_0, two for Q4_K, four for Q6_K), the pair `(A, C)`
/// with the run's `Σ x·w = A·Σ x·f + C·Σ x` for the codes `f` of [`chunk_codes`].
#[device(crate = crate::lang)]
pub(crate) fn chunk_coefficients(v: [u32; 13], b: u32, t: u32) -> [f32; 8] {
    let mut ac = [0.0f32; 8];
    if F == 0 {
        // w = d·(u − 128); Σ x·u = 256·(Σ x·f − Σ x).
        let odd = (b % 4) != 0;
        let d = f16_bits_to_f32(if odd { v[0] >> 16 } else { v[0] });
        ac[0] = 256.0 * d;
        ac[1] = -384.0 * d;
    }
    if F == 1 {
        // w = d·sc·u − dmin·mn; Σ x·u = 16·(Σ x·f − Σ x).
        let d = f16_bits_to_f32(v[0]);
        let dmin = f16_bits_to_f32(v[0] >> 16);
        let j = t / 2;
        for r in 0..2 {
            let sm = scale_min_k4(v[1], v[2], v[3], 2 * j + r);
            let a = 16.0 * d * (sm[0] as f32);
            ac[2 * r] = a;
            ac[2 * r + 1] = -(a + dmin * (sm[1] as f32));
        }
    }
    if F == 2 {
        // w = d·sc·(u − 32); Σ x·u = 64·(Σ x·f − Σ x).
        let h = t / 4;
        let p = t % 4;
        let sc = align_window([v[9], v[10], v[11]], b + 192 + 8 * h);
        let d = f16_bits_to_f32(if (b + 208) % 4 != 0 {
            v[12] >> 16
        } else {
            v[12]
        });
        let s = p / 2;
        let scales = [
            int8_to_f32(sc[0], s),
            int8_to_f32(sc[0], s + 2),
            int8_to_f32(sc[1], s),
            int8_to_f32(sc[1], s + 2),
        ];
        for r in 0..4 {
            let ds = d * scales[r];
            ac[2 * r] = 64.0 * ds;
            ac[2 * r + 1] = -96.0 * ds;
        }
    }
    ac
}
