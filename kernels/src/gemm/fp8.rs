//! fp8 matrices on the device and the fp8 GEMM's host op
//! ([`fp8_kernel`](super::fp8_kernel)): checks the operands, encodes their tensor maps and
//! launches persistent blocks over the 128×256 tiles.

use super::fp8_kernel::{gemm_fp8_wgmma, BK, SHARED_BYTES, THREADS, TILE_M, TILE_N};
use super::fp8_quantize_kernel::{fp8_quantize, THREADS as QUANTIZE_THREADS};
use crate::{check_len, Error, Float, FloatType};
use kernel_runtime::{Buffer, LaunchConfig, Stream, TensorMap, TensorSwizzle, TensorTiling};

const OP: &str = "gemm_fp8";

/// An 8-bit float format, as the OCP FP8 specification defines it and NVIDIA's tensor cores
/// read it: E4M3 (bias 7, three mantissa bits, no infinities, largest 448) or E5M2 (bias 15,
/// two mantissa bits, IEEE-like, largest finite 57344).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fp8Format {
    E4m3,
    E5m2,
}

impl Fp8Format {
    const fn man_bits(self) -> i32 {
        match self {
            Fp8Format::E4m3 => 3,
            Fp8Format::E5m2 => 2,
        }
    }

    const fn bias(self) -> i32 {
        match self {
            Fp8Format::E4m3 => 7,
            Fp8Format::E5m2 => 15,
        }
    }

    /// The largest finite value.
    pub const fn max(self) -> f32 {
        match self {
            Fp8Format::E4m3 => 448.0,
            Fp8Format::E5m2 => 57344.0,
        }
    }

    /// `v` rounded to the nearest value of the format (ties to even), saturating at ±`max`
    /// (infinities included); NaN becomes the format's NaN `0x7f`. This is what
    /// `cvt.rn.satfinite` does on the GPU.
    ///
    /// ```
    /// use kernels::gemm::Fp8Format;
    /// assert_eq!(Fp8Format::E4m3.encode(1.0), 0x38);
    /// assert_eq!(Fp8Format::E4m3.encode(1e9), 0x7e);
    /// assert_eq!(Fp8Format::E5m2.encode(-1.5), 0xbe);
    /// // 1 + 1/16 lies halfway between 1 and 1.125 in E4M3: the tie goes to the even 1.
    /// assert_eq!(Fp8Format::E4m3.decode(Fp8Format::E4m3.encode(1.0625)), 1.0);
    /// ```
    pub fn encode(self, v: f32) -> u8 {
        if v.is_nan() {
            return 0x7f;
        }
        let sign = if v.is_sign_negative() { 0x80 } else { 0 };
        let a = (v.abs() as f64).min(self.max() as f64);
        let man = self.man_bits();
        // The smallest normal exponent: below it the spacing is that of the subnormals.
        let min_exp = 1 - self.bias();
        let exp = if a == 0.0 {
            min_exp
        } else {
            (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(min_exp)
        };
        let quantum = 2f64.powi(exp - man);
        let r = (a / quantum).round_ties_even() * quantum;
        sign | self.bits_of(r)
    }

    /// The bits of a non-negative `r` that the format holds exactly.
    fn bits_of(self, r: f64) -> u8 {
        let man = self.man_bits();
        let min_normal = 2f64.powi(1 - self.bias());
        if r < min_normal {
            return (r / 2f64.powi(1 - self.bias() - man)) as u8;
        }
        let exp = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let frac = ((r / 2f64.powi(exp) - 1.0) * (1 << man) as f64) as u8;
        (((exp + self.bias()) as u8) << man) | frac
    }

    /// The value `bits` holds.
    ///
    /// ```
    /// use kernels::gemm::Fp8Format;
    /// assert_eq!(Fp8Format::E4m3.decode(0x7e), 448.0);
    /// assert_eq!(Fp8Format::E4m3.decode(0x01), 2f32.powi(-9));
    /// assert!(Fp8Format::E4m3.decode(0xff).is_nan());
    /// assert_eq!(Fp8Format::E5m2.decode(0x7c), f32::INFINITY);
    /// ```
    pub fn decode(self, bits: u8) -> f32 {
        let man = self.man_bits();
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((bits & 0x7f) >> man) as i32;
        let f = (bits & ((1 << man) - 1)) as f32;
        let all_ones = (1 << (7 - man)) - 1;
        match self {
            Fp8Format::E4m3 if bits & 0x7f == 0x7f => return f32::NAN,
            Fp8Format::E5m2 if e == all_ones && f != 0.0 => return f32::NAN,
            Fp8Format::E5m2 if e == all_ones => return sign * f32::INFINITY,
            _ => {}
        }
        let scale = (1 << man) as f32;
        let v = if e == 0 {
            f / scale * 2f32.powi(1 - self.bias())
        } else {
            (1.0 + f / scale) * 2f32.powi(e - self.bias())
        };
        sign * v
    }
}

/// An fp8 matrix on the device: `rows × cols` values of one format, row-major, four values to
/// a `u32` word with the first in the lowest byte (the order of the bytes in memory). `cols` is
/// a multiple of 16, so that every row starts 16-byte aligned as the copy engine needs.
///
/// ```
/// use kernels::gemm::{Fp8Format, Fp8Matrix};
/// use kernel_runtime::Device;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let m = Fp8Matrix::from_f32(&stream, Fp8Format::E4m3, 2, 16, &[0.5; 32])?;
/// assert_eq!((m.rows(), m.cols()), (2, 16));
/// assert_eq!(m.to_bytes(&stream)?, vec![0x30; 32]);
/// // A row of 8 values would start rows unaligned: refused.
/// assert!(Fp8Matrix::from_f32(&stream, Fp8Format::E4m3, 4, 8, &[0.5; 32]).is_err());
/// # Ok(()) }
/// ```
pub struct Fp8Matrix {
    words: Buffer<u32>,
    format: Fp8Format,
    rows: u32,
    cols: u32,
}

impl Fp8Matrix {
    /// Encodes `values` (`rows × cols`, row-major) on the host with [`Fp8Format::encode`] and
    /// uploads them.
    pub fn from_f32(
        stream: &Stream,
        format: Fp8Format,
        rows: u32,
        cols: u32,
        values: &[f32],
    ) -> Result<Fp8Matrix, Error> {
        let bytes: Vec<u8> = values.iter().map(|&v| format.encode(v)).collect();
        Fp8Matrix::from_bytes(stream, format, rows, cols, &bytes)
    }

    /// Uploads values already encoded in `format`, one byte each.
    pub fn from_bytes(
        stream: &Stream,
        format: Fp8Format,
        rows: u32,
        cols: u32,
        bytes: &[u8],
    ) -> Result<Fp8Matrix, Error> {
        check_shape(OP, rows, cols)?;
        check_len(
            OP,
            "bytes",
            bytes.len(),
            rows as usize * cols as usize,
            || format!("rows × cols = {rows} × {cols}"),
        )?;
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        Ok(Fp8Matrix {
            words: Buffer::from_host(stream, &words)?,
            format,
            rows,
            cols,
        })
    }

    /// Quantizes `x` (`rows × cols`, row-major, f32 or bf16) on the device: each value divided
    /// by `scale[0]` (read on the device, so a captured graph takes a new scale each replay),
    /// then rounded to `format` as [`Fp8Format::encode`] rounds (`cvt.rn.satfinite`, sm_89 and
    /// newer).
    ///
    /// ```
    /// use kernels::gemm::{Fp8Format, Fp8Matrix};
    /// use kernel_runtime::{Buffer, Device};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
    /// let x = Buffer::from_host(&stream, &[3.0f32; 32])?;
    /// let scale = Buffer::from_host(&stream, &[2.0f32])?;
    /// let q = Fp8Matrix::quantize(&stream, Fp8Format::E4m3, &x, 2, 16, &scale)?;
    /// assert_eq!(q.to_bytes(&stream)?, vec![Fp8Format::E4m3.encode(1.5); 32]);
    /// # Ok(()) }
    /// ```
    pub fn quantize<T: Float>(
        stream: &Stream,
        format: Fp8Format,
        x: &Buffer<T>,
        rows: u32,
        cols: u32,
        scale: &Buffer<f32>,
    ) -> Result<Fp8Matrix, Error> {
        const QUANTIZE: &str = "fp8_quantize";
        if T::TYPE == FloatType::F16 {
            return Err(Error::Unsupported {
                op: QUANTIZE,
                detail: "fp8 quantization reads f32 or bf16, not f16; cast first".into(),
            });
        }
        let target = stream.device().target();
        if target.sm() < 89 {
            return Err(Error::Unsupported {
                op: QUANTIZE,
                detail: format!(
                    "fp8 conversion (cvt.rn.satfinite) needs sm_89 or newer, not {}: encode on the host with Fp8Matrix::from_f32",
                    target.name()
                ),
            });
        }
        check_shape(QUANTIZE, rows, cols)?;
        let len = rows as usize * cols as usize;
        check_len(QUANTIZE, "x", x.len(), len, || {
            format!("rows × cols = {rows} × {cols}")
        })?;
        check_len(QUANTIZE, "scale", scale.len(), 1, || "one scale".into())?;
        let mut words = Buffer::<u32>::zeros(stream, len / 4)?;
        let n = (len / 4) as u32;
        let blocks = n.div_ceil(QUANTIZE_THREADS);
        let sms = stream.device().props().sm_count.max(1);
        let cfg = LaunchConfig::linear(blocks.min(8 * sms), QUANTIZE_THREADS);
        let e5m2 = (format == Fp8Format::E5m2) as u32;
        fp8_quantize::<T>(stream, cfg, e5m2, x, scale, &mut words, n)?;
        Ok(Fp8Matrix {
            words,
            format,
            rows,
            cols,
        })
    }

    pub fn format(&self) -> Fp8Format {
        self.format
    }

    pub fn rows(&self) -> u32 {
        self.rows
    }

    pub fn cols(&self) -> u32 {
        self.cols
    }

    /// The encoded values, four to a word.
    pub fn words(&self) -> &Buffer<u32> {
        &self.words
    }

    /// Downloads the encoded values, one byte each.
    pub fn to_bytes(&self, stream: &Stream) -> Result<Vec<u8>, Error> {
        let words = self.words.to_host(stream)?;
        Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }

    /// The tensor map the GEMM reads: words of four values, boxes of `box_rows` rows by one
    /// 128-deep slab, 128-byte swizzled.
    fn map(&self, box_rows: u32) -> Result<TensorMap, Error> {
        let (rows, words) = (self.rows as u64, self.cols as u64 / 4);
        let tiling =
            TensorTiling::matrix(rows, words, words, box_rows, BK / 4, TensorSwizzle::B128)
                .batched(1, rows * words);
        Ok(TensorMap::tiled(self.words.view(), &tiling)?)
    }
}

/// Positive extents and 16-byte rows.
fn check_shape(op: &'static str, rows: u32, cols: u32) -> Result<(), Error> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(16) {
        return Err(Error::Unsupported {
            op,
            detail: format!("an fp8 matrix has positive extents and a multiple of 16 columns (16-byte rows for the copy engine), not {rows} × {cols}: pad the rows with zeros"),
        });
    }
    Ok(())
}

/// `c = scales[0] · scales[1] · a · bᵀ` for fp8 `a` (`m × k`) and `b` (`n × k`) into `c`
/// (`m × n`, f32 or bf16), accumulating in f32, on the tensor cores of an sm_90a device (or
/// the emulator for sm_90a). The formats pair as the tensor cores allow: e4m3 with e4m3, and
/// e4m3 with e5m2 either way round. `scales` holds the two per-tensor scales on the device,
/// so a captured graph reads new ones each replay.
///
/// The sums stay in the tensor cores' accumulators across the whole of k, as cuBLASLt's
/// fast-accumulation mode does; Hopper keeps about 14 mantissa bits there, so at large k the
/// error can reach a few percent of the sum of the products' magnitudes.
///
/// ```
/// use kernels::gemm::{gemm_fp8, Fp8Format, Fp8Matrix};
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let a = Fp8Matrix::from_f32(&stream, Fp8Format::E4m3, 3, 16, &[1.0; 48])?;
/// let b = Fp8Matrix::from_f32(&stream, Fp8Format::E5m2, 5, 16, &[0.5; 80])?;
/// let scales = Buffer::from_host(&stream, &[2.0f32, 0.25])?;
/// let mut c = Buffer::<f32>::zeros(&stream, 15)?;
/// gemm_fp8(&stream, &a, &b, &scales, &mut c)?;
/// assert_eq!(c.to_host(&stream)?, vec![4.0; 15]);
/// # Ok(()) }
/// ```
pub fn gemm_fp8<O: Float>(
    stream: &Stream,
    a: &Fp8Matrix,
    b: &Fp8Matrix,
    scales: &Buffer<f32>,
    c: &mut Buffer<O>,
) -> Result<(), Error> {
    let ab = match (a.format, b.format) {
        (Fp8Format::E4m3, Fp8Format::E4m3) => 0,
        (Fp8Format::E4m3, Fp8Format::E5m2) => 1,
        (Fp8Format::E5m2, Fp8Format::E4m3) => 2,
        (Fp8Format::E5m2, Fp8Format::E5m2) => {
            return Err(Error::Unsupported {
                op: OP,
                detail: "e5m2 · e5m2 is not a pairing this GEMM builds; encode one operand in e4m3"
                    .into(),
            })
        }
    };
    if O::TYPE == FloatType::F16 {
        return Err(Error::Unsupported {
            op: OP,
            detail: "the fp8 GEMM writes f32 or bf16 outputs, not f16".into(),
        });
    }
    let target = stream.device().target();
    if target.sm() != 90 {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "the fp8 GEMM runs on the tensor cores of sm_90 (wgmma), not {}",
                target.name()
            ),
        });
    }
    if a.cols != b.cols {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "a is {} × {} and b {} × {}: both hold k = their column count, so it must agree",
                a.rows, a.cols, b.rows, b.cols
            ),
        });
    }
    let (m, n, k) = (a.rows, b.rows, a.cols);
    check_len(OP, "scales", scales.len(), 2, || {
        "[scale_a, scale_b]".into()
    })?;
    check_len(OP, "c", c.len(), m as usize * n as usize, || {
        format!("m × n = {m} × {n}")
    })?;
    let (map_a, map_b) = (a.map(TILE_M)?, b.map(TILE_N)?);
    let tiles = n.div_ceil(TILE_N) * m.div_ceil(TILE_M);
    let cfg = LaunchConfig {
        grid: [tiles.min(stream.device().props().sm_count.max(1)), 1, 1],
        block: [THREADS, 1, 1],
        dynamic_shared_bytes: SHARED_BYTES,
    };
    gemm_fp8_wgmma::<O>(stream, cfg, ab, &map_a, &map_b, c, scales, m, n, k, n, 0)?;
    Ok(())
}
