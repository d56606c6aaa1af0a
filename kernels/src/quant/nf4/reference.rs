//! The CPU reference, written from the format's definition: quantize, double-quantize and
//! dequantize a host copy of an NF4 weight, and the f64 products the device ops are checked
//! against.

use super::code::{dynamic_code, nearest_code, nf4_code_of, NF4_CODE};
use super::{BLOCK, DOUBLE_BLOCK};

/// A host copy of an NF4 weight of `rows × cols` (`cols` a multiple of 64), in the byte layout
/// of [`Nf4Weight`](super::Nf4Weight).
///
/// ```
/// use kernels::quant::nf4::reference::Nf4Host;
/// let w: Vec<f32> = (0..128).map(|i| (i as f32 - 64.0) / 8.0).collect();
/// let q = Nf4Host::quantize(&w, 1, 128);
/// assert_eq!(q.codes.len(), 64);
/// assert_eq!(q.absmax(0), 8.0);
/// let back = q.dequantize();
/// let bound = kernels::quant::nf4::reference::round_trip_bound(8.0);
/// assert!(back.iter().zip(&w).all(|(a, b)| (a - b).abs() <= bound * 1.0001));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Nf4Host {
    pub rows: usize,
    pub cols: usize,
    /// Two codes a byte, element `2i` in the high nibble of byte `i`.
    pub codes: Vec<u8>,
    pub scales: HostScales,
}

/// The per-block absmax values of a host weight.
#[derive(Clone, Debug, PartialEq)]
pub enum HostScales {
    /// One f32 per block of 64.
    Plain(Vec<f32>),
    /// Double quantization: absmax of block `b` is `code[q[b]] · scale[b / 256] + offset`.
    Double {
        q: Vec<u8>,
        /// The 256 values of [`dynamic_code`].
        code: Vec<f32>,
        scale: Vec<f32>,
        offset: f32,
    },
}

impl Nf4Host {
    /// Quantizes a row-major `rows × cols` weight: per block of 64, the absmax `a`, then each
    /// value times `1/a` (rounded to f32) gets the code of [`nf4_code_of`]. A block of zeros
    /// has absmax 0 and every code 0.
    pub fn quantize(w: &[f32], rows: usize, cols: usize) -> Nf4Host {
        assert_eq!(w.len(), rows * cols, "weight length");
        assert!(cols.is_multiple_of(BLOCK), "cols must be a multiple of 64");
        let mut codes = Vec::with_capacity(w.len() / 2);
        let mut absmax = Vec::with_capacity(w.len() / BLOCK);
        for block in w.chunks(BLOCK) {
            let a = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let inv = 1.0 / a;
            absmax.push(a);
            for pair in block.chunks(2) {
                codes.push((nf4_code_of(pair[0] * inv) << 4) | nf4_code_of(pair[1] * inv));
            }
        }
        Nf4Host {
            rows,
            cols,
            codes,
            scales: HostScales::Plain(absmax),
        }
    }

    /// Double-quantizes the absmax values: their f32 mean is the offset; the centred values,
    /// per block of 256, are divided by their absmax (the block's scale, via `1/scale`) and
    /// stored as the index of the nearest [`dynamic_code`] value. Already double: unchanged.
    pub fn double_quantize(&self) -> Nf4Host {
        let HostScales::Plain(absmax) = &self.scales else {
            return self.clone();
        };
        let code = dynamic_code();
        let (q, scale, offset) = double_quantize_absmax(absmax);
        Nf4Host {
            scales: HostScales::Double {
                q,
                code: code.to_vec(),
                scale,
                offset,
            },
            ..self.clone()
        }
    }

    /// The absmax of block `b` (decoded from its 8-bit form under double quantization, as
    /// `code · scale` then `+ offset`, each rounded to f32).
    pub fn absmax(&self, b: usize) -> f32 {
        match &self.scales {
            HostScales::Plain(a) => a[b],
            HostScales::Double {
                q,
                code,
                scale,
                offset,
            } => code[q[b] as usize] * scale[b / DOUBLE_BLOCK] + offset,
        }
    }

    /// The code of element `i` (row-major).
    pub fn code(&self, i: usize) -> u8 {
        let byte = self.codes[i / 2];
        if i.is_multiple_of(2) {
            byte >> 4
        } else {
            byte & 15
        }
    }

    /// Every element as `NF4_CODE[code] · absmax`, rounded to f32 (bitsandbytes'
    /// dequantization; a bf16 result is this value rounded to nearest even).
    pub fn dequantize(&self) -> Vec<f32> {
        (0..self.rows * self.cols)
            .map(|i| NF4_CODE[self.code(i) as usize] * self.absmax(i / BLOCK))
            .collect()
    }
}

/// Double quantization of absmax values: `(q, scale, offset)` with `offset` their f32 mean
/// (summed in f64), and per group of 256 the centred values divided by the group's absmax
/// `scale` (through `1/scale`) stored as the index of the nearest [`dynamic_code`] value.
///
/// ```
/// use kernels::quant::nf4::reference::double_quantize_absmax;
/// let (q, scale, offset) = double_quantize_absmax(&[1.0, 3.0]);
/// assert_eq!((q, scale, offset), (vec![0, 255], vec![1.0], 2.0));
/// ```
pub fn double_quantize_absmax(absmax: &[f32]) -> (Vec<u8>, Vec<f32>, f32) {
    let code = dynamic_code();
    let offset = (absmax.iter().map(|&a| a as f64).sum::<f64>() / absmax.len() as f64) as f32;
    let mut q = Vec::with_capacity(absmax.len());
    let mut scale = Vec::new();
    for chunk in absmax.chunks(DOUBLE_BLOCK) {
        let centred: Vec<f32> = chunk.iter().map(|a| a - offset).collect();
        let s = centred.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let inv = 1.0 / s;
        scale.push(s);
        q.extend(centred.iter().map(|&v| nearest_code(&code, v * inv)));
    }
    (q, scale, offset)
}

/// `y = x·Wᵀ` in f64 for `x` of `m × k` and `w` of `n × k`: `m × n`.
///
/// ```
/// let y = kernels::quant::nf4::reference::matmul_nt(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], 1, 2, 2);
/// assert_eq!(y, vec![11.0, 17.0]);
/// ```
pub fn matmul_nt(x: &[f64], w: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            y[i * n + j] = (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum();
        }
    }
    y
}

/// `dx = dy·W` in f64 for `dy` of `m × n` and `w` of `n × k`: `m × k`.
///
/// ```
/// let dx = kernels::quant::nf4::reference::matmul_nn(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], 1, 2, 2);
/// assert_eq!(dx, vec![13.0, 16.0]);
/// ```
pub fn matmul_nn(dy: &[f64], w: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut dx = vec![0.0; m * k];
    for i in 0..m {
        for j in 0..n {
            let d = dy[i * n + j];
            for p in 0..k {
                dx[i * k + p] += d * w[j * k + p];
            }
        }
    }
    dx
}

/// The largest error [`Nf4Host::quantize`] can make on a value of a block with absmax `a`:
/// half the widest gap between adjacent codes, times `a` (the thresholds sit at the
/// midpoints, so every value is within half a gap of its code's value).
///
/// ```
/// let e = kernels::quant::nf4::reference::round_trip_bound(2.0);
/// assert!(e > 0.3 && e < 0.31);
/// ```
pub fn round_trip_bound(a: f32) -> f32 {
    let gap = NF4_CODE
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(0.0f32, f32::max);
    0.5 * gap * a
}
