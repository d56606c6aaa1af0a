//! `block_q8_0`: 32 weights as int8 with one f16 scale.

use kernel_runtime::{Bf16, F16};

/// One Q8_0 block, 34 bytes for 32 weights, little-endian:
///
/// | bytes | field | meaning |
/// | --- | --- | --- |
/// | 0..2 | `d: f16` | the scale |
/// | 2..34 | `qs: [i8; 32]` | weight `j` is `qs[j] · d` |
///
/// ```
/// use kernels::quant::gguf::BlockQ8_0;
/// let x: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
/// let b = BlockQ8_0::quantize(x.as_slice().try_into().unwrap());
/// let y = b.dequantize();
/// assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 16.0 / 254.0 + 1e-3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ8_0 {
    pub d: F16,
    pub qs: [i8; 32],
}

impl BlockQ8_0 {
    /// Bytes of a block.
    pub const BYTES: usize = 34;

    /// Reads a block from its 34 bytes.
    pub fn read(b: &[u8; 34]) -> BlockQ8_0 {
        BlockQ8_0 {
            d: F16::from_bits(u16::from_le_bytes([b[0], b[1]])),
            qs: std::array::from_fn(|j| b[2 + j] as i8),
        }
    }

    /// Writes the block's 34 bytes.
    pub fn write(&self, out: &mut [u8; 34]) {
        out[..2].copy_from_slice(&self.d.to_bits().to_le_bytes());
        for (o, q) in out[2..].iter_mut().zip(self.qs) {
            *o = q as u8;
        }
    }

    /// The 32 weights, as ggml's `dequantize_row_q8_0`: `qs[j] · d` in f32.
    pub fn dequantize(&self) -> [f32; 32] {
        let d = self.d.to_f32();
        std::array::from_fn(|j| self.qs[j] as f32 * d)
    }

    /// The 32 weights as [`gemv_mma`](super::gemv_mma) decodes them to bf16 tensor-core
    /// operands: `d` rounded to bf16, then each `q·d` (exact in f32) rounded once to bf16.
    ///
    /// ```
    /// use kernels::quant::gguf::BlockQ8_0;
    /// let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 3.0).collect();
    /// let b = BlockQ8_0::quantize(x.as_slice().try_into().unwrap());
    /// let (exact, bf16) = (b.dequantize(), b.bf16_operand());
    /// assert!(exact.iter().zip(&bf16).all(|(e, h)| (e - h).abs() <= e.abs() / 128.0));
    /// ```
    pub fn bf16_operand(&self) -> [f32; 32] {
        let bf16 = |v: f32| Bf16::from_f32(v).to_f32();
        let d = bf16(self.d.to_f32());
        std::array::from_fn(|j| bf16(self.qs[j] as f32 * d))
    }

    /// Round-to-nearest quantization, as ggml's `quantize_row_q8_0_ref`: `d = max|x| / 127`,
    /// `qs[j] = round(x[j] / d)`. The error of a weight is at most `d / 2` plus the f16 rounding
    /// of `d` times `|qs[j]|`.
    pub fn quantize(x: &[f32; 32]) -> BlockQ8_0 {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        BlockQ8_0 {
            d: F16::from_f32(d),
            // ggml's `roundf`: halves away from zero.
            qs: std::array::from_fn(|j| (x[j] * id).round() as i8),
        }
    }
}
