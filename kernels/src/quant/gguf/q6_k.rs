//! `block_q6_K`: 256 weights as 6-bit values in 16 sub-blocks of 16, each with an int8 scale
//! under one f16 super-scale.

use super::q4_k::nearest;
use super::quantize::{make_qx_quants, GROUP_MAX_EPS};
use kernel_runtime::{Bf16, F16};

/// One Q6_K block, 210 bytes for 256 weights, little-endian:
///
/// | bytes | field | meaning |
/// | --- | --- | --- |
/// | 0..128 | `ql: [u8; 128]` | low 4 bits of the weights |
/// | 128..192 | `qh: [u8; 64]` | high 2 bits of the weights |
/// | 192..208 | `scales: [i8; 16]` | the scale of each sub-block of 16 weights |
/// | 208..210 | `d: f16` | the scale of the scales |
///
/// In each half `h` (weights `128h..128h + 128`), for `l < 32`, with `L = ql[64h..]`,
/// `H = qh[32h..]` and `S = scales[8h..]`, `s = l / 16`:
///
/// | weight | 6-bit value `q` (the weight is `d · S[..] · (q − 32)`) | scale |
/// | --- | --- | --- |
/// | `128h + l` | `L[l] & 15 \| (H[l] & 3) << 4` | `S[s]` |
/// | `128h + 32 + l` | `L[l + 32] & 15 \| (H[l] >> 2 & 3) << 4` | `S[s + 2]` |
/// | `128h + 64 + l` | `L[l] >> 4 \| (H[l] >> 4 & 3) << 4` | `S[s + 4]` |
/// | `128h + 96 + l` | `L[l + 32] >> 4 \| (H[l] >> 6) << 4` | `S[s + 6]` |
///
/// ```
/// use kernels::quant::gguf::BlockQ6K;
/// let x: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
/// let b = BlockQ6K::quantize(x.as_slice().try_into().unwrap());
/// let y = b.dequantize();
/// assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.05));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ6K {
    pub ql: [u8; 128],
    pub qh: [u8; 64],
    pub scales: [i8; 16],
    pub d: F16,
}

impl BlockQ6K {
    /// Bytes of a block.
    pub const BYTES: usize = 210;

    /// Reads a block from its 210 bytes.
    pub fn read(b: &[u8; 210]) -> BlockQ6K {
        BlockQ6K {
            ql: std::array::from_fn(|j| b[j]),
            qh: std::array::from_fn(|j| b[128 + j]),
            scales: std::array::from_fn(|j| b[192 + j] as i8),
            d: F16::from_bits(u16::from_le_bytes([b[208], b[209]])),
        }
    }

    /// Writes the block's 210 bytes.
    pub fn write(&self, out: &mut [u8; 210]) {
        out[..128].copy_from_slice(&self.ql);
        out[128..192].copy_from_slice(&self.qh);
        for (o, s) in out[192..208].iter_mut().zip(self.scales) {
            *o = s as u8;
        }
        out[208..].copy_from_slice(&self.d.to_bits().to_le_bytes());
    }

    /// The 256 weights, as ggml's `dequantize_row_q6_K`: `(d · scale) · (q − 32)` in f32.
    pub fn dequantize(&self) -> [f32; 256] {
        let d = self.d.to_f32();
        std::array::from_fn(|i| d * self.scales[i / 16] as f32 * (self.code(i) as i32 - 32) as f32)
    }

    /// The 256 weights as [`gemv_mma`](super::gemv_mma) decodes them to bf16 tensor-core
    /// operands: `d` rounded to bf16, the sub-block scale `a = d·scale` rounded to bf16 (the
    /// product is exact in f32), then each weight `a·(q − 32)`, exact before its one rounding
    /// to bf16.
    ///
    /// ```
    /// use kernels::quant::gguf::BlockQ6K;
    /// let x: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    /// let b = BlockQ6K::quantize(x.as_slice().try_into().unwrap());
    /// let (exact, bf16) = (b.dequantize(), b.bf16_operand());
    /// assert!(exact.iter().zip(&bf16).all(|(e, h)| (e - h).abs() <= e.abs() / 64.0 + 1e-3));
    /// ```
    pub fn bf16_operand(&self) -> [f32; 256] {
        let bf16 = |v: f32| Bf16::from_f32(v).to_f32();
        let d = bf16(self.d.to_f32());
        let mut y = [0.0f32; 256];
        for (i, v) in y.iter_mut().enumerate() {
            let a = bf16(d * self.scales[i / 16] as f32);
            let q = self.code(i) as i32 - 32;
            *v = bf16(a * q as f32);
        }
        y
    }

    /// The 6-bit value of weight `i` (0..256), as the table above places it.
    pub fn code(&self, i: usize) -> u8 {
        let (h, r, l) = (i / 128, (i % 128) / 32, i % 32);
        let low = self.ql[64 * h + 32 * (r % 2) + l] >> (4 * (r / 2)) & 0xF;
        let high = (self.qh[32 * h + l] >> (2 * r)) & 3;
        low | (high << 4)
    }

    /// Quantizes 256 weights as ggml's `quantize_row_q6_K_ref`: per sub-block of 16 the scale
    /// of `make_qx_quants`, the scales to int8 under `d = −max/128`, then each weight rounded
    /// against its final scale to `-32..32`.
    pub fn quantize(x: &[f32; 256]) -> BlockQ6K {
        let mut l = [0u8; 256];
        let mut scales = [0.0f32; 16];
        let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
        for ib in 0..16 {
            let s = make_qx_quants(32, &x[16 * ib..16 * ib + 16], &mut l[16 * ib..16 * ib + 16]);
            scales[ib] = s;
            if s.abs() > max_abs_scale {
                max_abs_scale = s.abs();
                max_scale = s;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            return BlockQ6K {
                ql: [0; 128],
                qh: [0; 64],
                scales: [0; 16],
                d: F16::from_f32(0.0),
            };
        }
        let iscale = -128.0 / max_scale;
        let d = F16::from_f32(1.0 / iscale);
        let sc: [i8; 16] = std::array::from_fn(|ib| nearest(iscale * scales[ib]).min(127) as i8);
        for j in 0..16 {
            let dj = d.to_f32() * sc[j] as f32;
            if dj == 0.0 {
                continue;
            }
            for ii in 0..16 {
                let q = nearest(x[16 * j + ii] / dj).clamp(-32, 31);
                l[16 * j + ii] = (q + 32) as u8;
            }
        }
        let mut ql = [0u8; 128];
        let mut qh = [0u8; 64];
        for h in 0..2 {
            let (j, lo, hi) = (128 * h, 64 * h, 32 * h);
            for k in 0..32 {
                let q = [l[j + k], l[j + k + 32], l[j + k + 64], l[j + k + 96]];
                ql[lo + k] = (q[0] & 0xF) | ((q[2] & 0xF) << 4);
                ql[lo + k + 32] = (q[1] & 0xF) | ((q[3] & 0xF) << 4);
                qh[hi + k] =
                    (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
            }
        }
        BlockQ6K {
            ql,
            qh,
            scales: sc,
            d,
        }
    }
}
