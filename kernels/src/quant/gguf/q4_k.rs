//! `block_q4_K`: 256 weights as 4-bit values in 8 sub-blocks of 32, each with a 6-bit scale
//! and a 6-bit min, under two f16 super-scales.

use super::quantize::make_qkx2_quants;
use kernel_runtime::{Bf16, F16};

/// One Q4_K block, 144 bytes for 256 weights, little-endian:
///
/// | bytes | field | meaning |
/// | --- | --- | --- |
/// | 0..2 | `d: f16` | the scale of the sub-block scales |
/// | 2..4 | `dmin: f16` | the scale of the sub-block mins |
/// | 4..16 | `scales: [u8; 12]` | 6-bit scale `sc[j]` and min `m[j]` of sub-blocks 0..8: for `j < 4`, `sc[j] = scales[j] & 63`, `m[j] = scales[j + 4] & 63`; for `j ≥ 4`, `sc[j] = (scales[j + 4] & 15) \| (scales[j - 4] >> 6) << 4`, `m[j] = (scales[j + 4] >> 4) \| (scales[j] >> 6) << 4` |
/// | 16..144 | `qs: [u8; 128]` | 4-bit weights: byte `32i + l` holds weight `64i + l` in its low nibble and `64i + 32 + l` in its high nibble |
///
/// Weight `e` of sub-block `j` is `d·sc[j] · q − dmin·m[j]`.
///
/// ```
/// use kernels::quant::gguf::BlockQ4K;
/// let x: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
/// let b = BlockQ4K::quantize(x.as_slice().try_into().unwrap());
/// let y = b.dequantize();
/// assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ4K {
    pub d: F16,
    pub dmin: F16,
    pub scales: [u8; 12],
    pub qs: [u8; 128],
}

/// Sub-block `j`'s 6-bit scale and min from the packed bytes (ggml's `get_scale_min_k4`).
pub(crate) fn scale_min(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

impl BlockQ4K {
    /// Bytes of a block.
    pub const BYTES: usize = 144;

    /// Reads a block from its 144 bytes.
    pub fn read(b: &[u8; 144]) -> BlockQ4K {
        BlockQ4K {
            d: F16::from_bits(u16::from_le_bytes([b[0], b[1]])),
            dmin: F16::from_bits(u16::from_le_bytes([b[2], b[3]])),
            scales: std::array::from_fn(|j| b[4 + j]),
            qs: std::array::from_fn(|j| b[16 + j]),
        }
    }

    /// Writes the block's 144 bytes.
    pub fn write(&self, out: &mut [u8; 144]) {
        out[..2].copy_from_slice(&self.d.to_bits().to_le_bytes());
        out[2..4].copy_from_slice(&self.dmin.to_bits().to_le_bytes());
        out[4..16].copy_from_slice(&self.scales);
        out[16..].copy_from_slice(&self.qs);
    }

    /// The 256 weights, as ggml's `dequantize_row_q4_K`: `d1 · q − m1` with `d1 = d·sc` and
    /// `m1 = dmin·m` in f32, each operation rounded on its own.
    pub fn dequantize(&self) -> [f32; 256] {
        let d = self.d.to_f32();
        let min = self.dmin.to_f32();
        let mut y = [0.0f32; 256];
        for i in 0..4 {
            let (sc1, m1) = scale_min(2 * i, &self.scales);
            let (sc2, m2) = scale_min(2 * i + 1, &self.scales);
            let (d1, m1) = (d * sc1 as f32, min * m1 as f32);
            let (d2, m2) = (d * sc2 as f32, min * m2 as f32);
            for l in 0..32 {
                let q = self.qs[32 * i + l];
                y[64 * i + l] = d1 * (q & 0xF) as f32 - m1;
                y[64 * i + 32 + l] = d2 * (q >> 4) as f32 - m2;
            }
        }
        y
    }

    /// The 256 weights as the tensor-core GEMV ([`gemv_mma`](super::gemv_mma)) multiplies
    /// them, in bf16 (widened to f32 exactly): `u·a − b` rounded once to nearest even, where
    /// `a = sc·d` and `b = m·dmin` are rounded to bf16 from `d` and `dmin` themselves rounded
    /// to bf16.
    ///
    /// ```
    /// use kernels::quant::gguf::BlockQ4K;
    /// let x: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    /// let b = BlockQ4K::quantize(x.as_slice().try_into().unwrap());
    /// let (exact, bf16) = (b.dequantize(), b.bf16_operand());
    /// assert!(exact.iter().zip(&bf16).all(|(e, h)| (e - h).abs() <= e.abs() / 64.0 + 1e-2));
    /// ```
    pub fn bf16_operand(&self) -> [f32; 256] {
        let bf16 = |v: f32| Bf16::from_f32(v).to_f32();
        let d = bf16(self.d.to_f32());
        let min = bf16(self.dmin.to_f32());
        let mut y = [0.0f32; 256];
        for j in 0..8 {
            let (sc, m) = scale_min(j, &self.scales);
            // Exact in f32 (an 8-bit value times a 6-bit one), then one rounding.
            let (a, b) = (bf16(d * sc as f32) as f64, bf16(min * m as f32) as f64);
            for l in 0..32 {
                let byte = self.qs[32 * (j / 2) + l];
                let u = if j % 2 == 0 { byte & 0xF } else { byte >> 4 };
                // Exact in f64 (a 4-bit code times an 8-bit scale, less an 8-bit offset); the
                // one rounding to f32 is exact too for scales and offsets within 2¹² of each
                // other, as a quantizer's are.
                y[64 * (j / 2) + 32 * (j % 2) + l] = bf16((u as f64 * a - b) as f32);
            }
        }
        y
    }

    /// Quantizes 256 weights as ggml's `quantize_row_q4_K_ref`: per sub-block the scale and
    /// min of `make_qkx2_quants` (weighted least squares over a few trial scales), then both
    /// sets to 6 bits under the f16 super-scales, and each weight rounded against the final
    /// scale and min.
    pub fn quantize(x: &[f32; 256]) -> BlockQ4K {
        let mut l = [0u8; 256];
        let mut scales = [0.0f32; 8];
        let mut mins = [0.0f32; 8];
        let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
        for j in 0..8 {
            let xs = &x[32 * j..32 * j + 32];
            let sum_x2: f32 = xs.iter().map(|v| v * v).sum();
            let av_x = (sum_x2 / 32.0).sqrt();
            let weights: Vec<f32> = xs.iter().map(|v| av_x + v.abs()).collect();
            let (scale, min) =
                make_qkx2_quants(15, xs, &weights, &mut l[32 * j..32 * j + 32], -1.0, 0.1, 20);
            scales[j] = scale;
            mins[j] = min;
            max_scale = max_scale.max(scale);
            max_min = max_min.max(min);
        }
        let inv_scale = if max_scale > 0.0 {
            63.0 / max_scale
        } else {
            0.0
        };
        let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
        let mut packed = [0u8; 12];
        for j in 0..8 {
            let ls = (nearest(inv_scale * scales[j]) as u8).min(63);
            let lm = (nearest(inv_min * mins[j]) as u8).min(63);
            if j < 4 {
                packed[j] = ls;
                packed[j + 4] = lm;
            } else {
                packed[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
                packed[j - 4] |= (ls >> 4) << 6;
                packed[j] |= (lm >> 4) << 6;
            }
        }
        let d = F16::from_f32(max_scale / 63.0);
        let dmin = F16::from_f32(max_min / 63.0);
        for j in 0..8 {
            let (sc, m) = scale_min(j, &packed);
            let dj = d.to_f32() * sc as f32;
            if dj == 0.0 {
                continue;
            }
            let dm = dmin.to_f32() * m as f32;
            for ii in 0..32 {
                l[32 * j + ii] = nearest((x[32 * j + ii] + dm) / dj).clamp(0, 15) as u8;
            }
        }
        let mut qs = [0u8; 128];
        for i in 0..4 {
            for k in 0..32 {
                qs[32 * i + k] = l[64 * i + k] | (l[64 * i + 32 + k] << 4);
            }
        }
        BlockQ4K {
            d,
            dmin,
            scales: packed,
            qs,
        }
    }
}

/// ggml's `nearest_int`: round half to even.
pub(crate) fn nearest(v: f32) -> i32 {
    v.round_ties_even() as i32
}
