//! `#[device]` helpers for the int8 GEMV (`gemv_q8_kernel.rs`): the weights' codes unpacked
//! into words of four bytes that `dp4a` multiplies with four int8 activations, and the f32
//! scales of each run of codes. A lane's unit of work is a piece: a Q8_0 block (32 weights),
//! a quarter of a Q4_K block (64 weights: two whole sub-blocks, so a sub-block's min meets
//! the sum of a whole activation block) or a Q6_K chunk (32 weights in four runs of 8, as
//! `decode.rs` defines it). The helpers read the calling kernel's format parameter `F`.

use kernel_macros::device;

/// Pieces in a row of `k` weights.
#[device(crate = crate::lang)]
pub(crate) fn pieces_per_row(k: u32) -> u32 {
    if F == 1 {
        k / 64
    } else {
        k / 32
    }
}

/// The words piece `c` of the row at byte `base` of `w` decodes from, all loaded before any
/// is used. A Q4_K piece is three aligned 16-byte loads: the block's header and its 32 bytes
/// of nibbles (blocks of 144 bytes keep every row 16-byte aligned).
#[device(crate = crate::lang)]
pub(crate) fn load_piece(w: &[u32], base: u32, c: u32) -> [u32; 13] {
    let mut v = [0u32; 13];
    if F == 1 {
        let b = (base + 144 * (c / 4)) / 4;
        let head = w.load_vec::<4>(b);
        let q0 = w.load_vec::<4>(b + 4 + 8 * (c % 4));
        let q1 = w.load_vec::<4>(b + 8 + 8 * (c % 4));
        for j in 0..4 {
            v[j] = head[j];
            v[4 + j] = q0[j];
            v[8 + j] = q1[j];
        }
    } else {
        let at = chunk_at(c);
        let words = load_chunk(w, base + at[0], at[1]);
        for j in 0..13 {
            v[j] = words[j];
        }
    }
    v
}

/// The codes of piece `c` (its words `v` from [`load_piece`], the row at byte `base`) as
/// words of four bytes, in the order of the activations they meet: Q8_0's 32 int8 (words
/// 0..8); Q4_K's low nibbles (sub-block `2·(c % 4)`, words 0..8) then high nibbles (the next
/// sub-block, words 8..16); Q6_K's 6-bit codes, unsigned, two words for each of its four runs.
#[device(crate = crate::lang)]
pub(crate) fn piece_codes(v: [u32; 13], base: u32, c: u32) -> [u32; 16] {
    let mut q = [0u32; 16];
    if F == 0 {
        let odd = ((base + 34 * c) % 4) != 0;
        for j in 0..8 {
            // The 32 int8 start two bytes into the block.
            q[j] = if odd {
                v[j + 1]
            } else {
                (v[j] >> 16) | (v[j + 1] << 16)
            };
        }
    }
    if F == 1 {
        for j in 0..8 {
            q[j] = v[4 + j] & 0x0f0f_0f0f;
            q[8 + j] = (v[4 + j] >> 4) & 0x0f0f_0f0f;
        }
    }
    if F == 2 {
        let b = base + 210 * (c / 8);
        let h = (c % 8) / 4;
        let p = c % 4;
        let ql0 = align_window([v[0], v[1], v[2]], b + 64 * h + 8 * p);
        let ql1 = align_window([v[3], v[4], v[5]], b + 64 * h + 32 + 8 * p);
        let qh = align_window([v[6], v[7], v[8]], b + 128 + 32 * h + 8 * p);
        for r in 0..4 {
            for j in 0..2 {
                // Run r: the low four bits from a nibble of ql0 or ql1, the high two from qh.
                let low = if r % 2 == 0 { ql0[j] } else { ql1[j] };
                q[2 * r + j] = ((low >> (4 * (r / 2))) & 0x0f0f_0f0f)
                    | (((qh[j] >> (2 * r)) & 0x0303_0303) << 4);
            }
        }
    }
    q
}

/// The f32 scales of piece `c`'s runs, the weight of a code `u` being, per format: Q8_0
/// `s[0]·u` (`u` int8); Q4_K `s[2r]·u − s[2r + 1]` for sub-block `r` of the piece; Q6_K
/// `s[r]·(u − 32)` for run `r`. Each is the product ggml's dequantizer rounds, so the weights
/// these describe are the reference's before its last rounding.
#[device(crate = crate::lang)]
pub(crate) fn piece_scales(v: [u32; 13], base: u32, c: u32) -> [f32; 4] {
    let mut s = [0.0f32; 4];
    if F == 0 {
        let odd = ((base + 34 * c) % 4) != 0;
        s[0] = f16_bits_to_f32(if odd { v[0] >> 16 } else { v[0] });
    }
    if F == 1 {
        let d = f16_bits_to_f32(v[0]);
        let dmin = f16_bits_to_f32(v[0] >> 16);
        for r in 0..2 {
            let sm = scale_min_k4(v[1], v[2], v[3], 2 * (c % 4) + r);
            s[2 * r] = d * small_u32_to_f32(sm[0]);
            s[2 * r + 1] = dmin * small_u32_to_f32(sm[1]);
        }
    }
    if F == 2 {
        let b = base + 210 * (c / 8);
        let h = (c % 8) / 4;
        let p = c % 4;
        let sc = align_window([v[9], v[10], v[11]], b + 192 + 8 * h);
        let d = f16_bits_to_f32(if (b + 208) % 4 != 0 {
            v[12] >> 16
        } else {
            v[12]
        });
        let at = p / 2;
        s[0] = d * int8_to_f32(sc[0], at);
        s[1] = d * int8_to_f32(sc[0], at + 2);
        s[2] = d * int8_to_f32(sc[1], at);
        s[3] = d * int8_to_f32(sc[1], at + 2);
    }
    s
}

/// `total` plus piece `c`'s dot product with one row of quantized activations (`xq` its int8
/// words, `xs` its `(d, d·Σq)` pair per block of 32, both from the row's start): integer
/// `dp4a` sums over each run, exact, then one scale product per run in f32.
#[device(crate = crate::lang)]
pub(crate) fn piece_dot(
    q: [u32; 16],
    s: [f32; 4],
    xq: &[u32],
    xs: &[f32],
    c: u32,
    total: f32,
) -> f32 {
    let mut acc = total;
    if F == 0 {
        let x0 = xq.load_vec::<4>(8 * c);
        let x1 = xq.load_vec::<4>(8 * c + 4);
        let dx = xs[2 * c];
        let mut sum = 0i32;
        for j in 0..4 {
            sum = dp4a_s8(q[j], x0[j], sum);
            sum = dp4a_s8(q[4 + j], x1[j], sum);
        }
        acc = fma(s[0] * dx, sum as f32, acc);
    }
    if F == 1 {
        // Sub-blocks 2c and 2c + 1 of the row are activation blocks 2c and 2c + 1.
        let ds = xs.load_vec::<4>(4 * c);
        for r in 0..2 {
            let x0 = xq.load_vec::<4>(16 * c + 8 * r);
            let x1 = xq.load_vec::<4>(16 * c + 8 * r + 4);
            let mut sum = 0i32;
            for j in 0..4 {
                sum = dp4a_u8_s8(q[8 * r + j], x0[j], sum);
                sum = dp4a_u8_s8(q[8 * r + 4 + j], x1[j], sum);
            }
            // Σ x·(a·u − b) = a·dx·Σ q·u − b·(dx·Σ q), the second factor stored per block.
            acc = fma(
                s[2 * r] * ds[2 * r],
                sum as f32,
                fma(-s[2 * r + 1], ds[2 * r + 1], acc),
            );
        }
    }
    if F == 2 {
        // Run r of chunk t = c % 8 of block c / 8 is 8 weights of activation block
        // 8·(c / 8) + 4·(t / 4) + r, starting 8·(t % 4) into it.
        let first = 8 * (c / 8) + 4 * ((c % 8) / 4);
        for r in 0..4 {
            let blk = first + r;
            let xv = xq.load_vec::<2>(8 * blk + 2 * (c % 4));
            let codes = dp4a_u8_s8(q[2 * r], xv[0], dp4a_u8_s8(q[2 * r + 1], xv[1], 0));
            // The codes are stored plus 32.
            let bias = dp4a_u8_s8(0x2020_2020, xv[0], dp4a_u8_s8(0x2020_2020, xv[1], 0));
            acc = fma(s[r] * xs[2 * blk], (codes - bias) as f32, acc);
        }
    }
    acc
}
