//! [`Nf4Weight`]: a frozen `[N, K]` weight in NF4 on the device, with its conversions.

use super::code::dynamic_code;
use super::dequantize_kernel::{self, nf4_dequantize};
use super::quantize_kernel::{self, nf4_quantize};
use super::reference::{double_quantize_absmax, HostScales, Nf4Host};
use super::{BLOCK, DOUBLE_BLOCK};
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// An NF4 weight of `rows × cols` (row-major, `cols` a multiple of 64) on the device, in
/// bitsandbytes' layout.
///
/// **Codes.** Element `i = r·cols + c` has a 4-bit code; byte `i / 2` of the code stream holds
/// element `i` in its high nibble when `i` is even and in its low nibble when odd. The stream
/// is `rows·cols / 2` bytes, kept as little-endian 32-bit words (byte `b` is bits
/// `8·(b % 4)..` of word `b / 4`), so the bytes are those bitsandbytes writes.
///
/// **Scales.** Elements `64b..64b+64` form block `b` (a block never crosses a row), with
/// absmax `a_b`; element `i` is `NF4_CODE[code(i)] · a_{i/64}`. Either the `rows·cols / 64`
/// absmax values are stored as f32, or (double quantization) as one byte `q_b` each with,
/// per group of 256 blocks, an f32 scale `s_g`, and one f32 `offset` for the whole weight:
/// `a_b = dynamic_code[q_b] · s_{b/256} + offset` (see [`dynamic_code`]).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::nf4::Nf4Weight;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w: Vec<f32> = (0..2 * 64).map(|i| ((i * 37 % 64) as f32 - 32.0) / 16.0).collect();
/// let dev = Buffer::from_host(&stream, &w)?;
/// let q = Nf4Weight::quantize(&stream, &dev, 2, 64)?;
/// assert_eq!((q.rows(), q.cols(), q.stored_bytes()), (2, 64, 64 + 2 * 4));
/// let mut back = Buffer::<f32>::zeros(&stream, 128)?;
/// q.dequantize(&stream, &mut back)?;
/// assert_eq!(back.to_host(&stream)?[0], w[0]); // -2.0 is the block's absmax: exact
/// # Ok(()) }
/// ```
pub struct Nf4Weight {
    rows: usize,
    cols: usize,
    codes: Buffer<u32>,
    scales: Scales,
}

/// Where a weight keeps its block absmax values on the device.
enum Scales {
    Plain(Buffer<f32>),
    Double {
        q: Buffer<u32>,
        code: Buffer<f32>,
        scale: Buffer<f32>,
        offset: f32,
    },
}

/// The scale parameters every NF4 kernel takes: `absmax, qabs, code2, scale2, offset,
/// double`. The buffers a layout does not use are stand-ins the kernel never reads.
pub(crate) struct ScaleArgs<'a> {
    pub absmax: &'a Buffer<f32>,
    pub qabs: &'a Buffer<u32>,
    pub code2: &'a Buffer<f32>,
    pub scale2: &'a Buffer<f32>,
    pub offset: f32,
    pub double: u32,
}

impl Nf4Weight {
    /// Quantizes the row-major `rows × cols` weight `w` on the device (absmax per block of
    /// 64 stored as f32; [`Nf4Weight::double_quantize`] compresses them). `cols` must be a
    /// multiple of 64 and `w` hold `rows · cols` elements.
    pub fn quantize<T: Float>(
        stream: &Stream,
        w: &Buffer<T>,
        rows: usize,
        cols: usize,
    ) -> Result<Nf4Weight, Error> {
        crate::float::f32_or_bf16::<T>("quantize")?;
        let words = check_shape("nf4_quantize", rows, cols)?;
        check_len("nf4_quantize", "w", w.len(), rows * cols, || {
            format!("rows × cols = {rows} × {cols}")
        })?;
        let mut codes = Buffer::<u32>::zeros(stream, words.max(1) as usize)?;
        let mut absmax = Buffer::<f32>::zeros(stream, (words as usize / 8).max(1))?;
        if words > 0 {
            let cfg = LaunchConfig::for_elements(words, quantize_kernel::THREADS);
            nf4_quantize::<T>(stream, cfg, w, &mut codes, &mut absmax, words)?;
        }
        Ok(Nf4Weight {
            rows,
            cols,
            codes,
            scales: Scales::Plain(absmax),
        })
    }

    /// Uploads a host weight (for one quantized elsewhere, or loaded from a file).
    pub fn from_host(stream: &Stream, host: &Nf4Host) -> Result<Nf4Weight, Error> {
        let (rows, cols) = (host.rows, host.cols);
        let words = check_shape("nf4_from_host", rows, cols)? as usize;
        check_len(
            "nf4_from_host",
            "codes",
            host.codes.len(),
            words * 4,
            || format!("rows × cols / 2 = {rows} × {cols} / 2 bytes"),
        )?;
        let blocks = words / 8;
        let codes = Buffer::from_host(stream, &pack_words(&host.codes).pad(1))?;
        let scales = match &host.scales {
            HostScales::Plain(a) => {
                check_len("nf4_from_host", "absmax", a.len(), blocks, || {
                    "one per block of 64".into()
                })?;
                Scales::Plain(Buffer::from_host(stream, &a.clone().pad(1))?)
            }
            HostScales::Double {
                q,
                code,
                scale,
                offset,
            } => {
                check_len("nf4_from_host", "q", q.len(), blocks, || {
                    "one byte per block of 64".into()
                })?;
                check_len("nf4_from_host", "code", code.len(), 256, || {
                    "the 256 values of the dynamic code".into()
                })?;
                let groups = blocks.div_ceil(DOUBLE_BLOCK);
                check_len("nf4_from_host", "scale", scale.len(), groups, || {
                    "one per 256 blocks".into()
                })?;
                Scales::Double {
                    q: Buffer::from_host(stream, &pack_words(q).pad(1))?,
                    code: Buffer::from_host(stream, code)?,
                    scale: Buffer::from_host(stream, &scale.clone().pad(1))?,
                    offset: *offset,
                }
            }
        };
        Ok(Nf4Weight {
            rows,
            cols,
            codes,
            scales,
        })
    }

    /// Downloads the weight in the host layout of the reference.
    pub fn to_host(&self, stream: &Stream) -> Result<Nf4Host, Error> {
        let n = self.rows * self.cols;
        let blocks = n / BLOCK;
        let codes = unpack_words(&self.codes.to_host(stream)?, n / 2);
        let scales = match &self.scales {
            Scales::Plain(a) => HostScales::Plain(a.to_host(stream)?[..blocks].to_vec()),
            Scales::Double {
                q,
                code,
                scale,
                offset,
            } => HostScales::Double {
                q: unpack_words(&q.to_host(stream)?, blocks),
                code: code.to_host(stream)?,
                scale: scale.to_host(stream)?[..blocks.div_ceil(DOUBLE_BLOCK)].to_vec(),
                offset: *offset,
            },
        };
        Ok(Nf4Host {
            rows: self.rows,
            cols: self.cols,
            codes,
            scales,
        })
    }

    /// The same weight with its absmax values double-quantized (bitsandbytes'
    /// `compress_statistics`). The absmax values (one per 64 weights) are read back and
    /// quantized on the host by [`double_quantize_absmax`], then uploaded; the codes are
    /// copied on the device.
    pub fn double_quantize(&self, stream: &Stream) -> Result<Nf4Weight, Error> {
        let Scales::Plain(absmax) = &self.scales else {
            return Err(Error::Unsupported {
                op: "nf4_double_quantize",
                detail: "the weight is already double-quantized".into(),
            });
        };
        let blocks = self.rows * self.cols / BLOCK;
        let (q, scale, offset) = double_quantize_absmax(&absmax.to_host(stream)?[..blocks]);
        let mut codes = Buffer::<u32>::zeros(stream, self.codes.len())?;
        codes.copy_from(stream, &self.codes)?;
        Ok(Nf4Weight {
            rows: self.rows,
            cols: self.cols,
            codes,
            scales: Scales::Double {
                q: Buffer::from_host(stream, &pack_words(&q).pad(1))?,
                code: Buffer::from_host(stream, &dynamic_code())?,
                scale: Buffer::from_host(stream, &scale.pad(1))?,
                offset,
            },
        })
    }

    /// Writes every element, `NF4_CODE[code] · absmax` rounded to `T`, into `out`
    /// (`rows · cols` elements).
    pub fn dequantize<T: Float>(&self, stream: &Stream, out: &mut Buffer<T>) -> Result<(), Error> {
        crate::float::f32_or_bf16::<T>("dequantize")?;
        check_len(
            "nf4_dequantize",
            "out",
            out.len(),
            self.rows * self.cols,
            || format!("rows × cols = {} × {}", self.rows, self.cols),
        )?;
        self.dequantize_into_front(stream, out)
    }

    /// [`Nf4Weight::dequantize`] into the first `rows · cols` elements of `out`, which holds
    /// at least that many (a workspace sized for a larger weight).
    pub(crate) fn dequantize_into_front<T: Float>(
        &self,
        stream: &Stream,
        out: &mut Buffer<T>,
    ) -> Result<(), Error> {
        debug_assert!(out.len() >= self.rows * self.cols);
        let words = self.words();
        if words == 0 {
            return Ok(());
        }
        let s = self.scale_args();
        let cfg = LaunchConfig::for_elements(words, dequantize_kernel::THREADS);
        nf4_dequantize::<T>(
            stream,
            cfg,
            &self.codes,
            s.absmax,
            s.qabs,
            s.code2,
            s.scale2,
            s.offset,
            s.double,
            out,
            words,
        )?;
        Ok(())
    }

    /// Rows (N, the output features).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (K, the input features).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Whether the absmax values are double-quantized.
    pub fn is_double_quantized(&self) -> bool {
        matches!(self.scales, Scales::Double { .. })
    }

    /// The bytes a pass over the weight reads: the codes and the scales.
    pub fn stored_bytes(&self) -> usize {
        let n = self.rows * self.cols;
        let blocks = n / BLOCK;
        n / 2
            + match self.scales {
                Scales::Plain(_) => 4 * blocks,
                Scales::Double { .. } => blocks + 4 * blocks.div_ceil(DOUBLE_BLOCK),
            }
    }

    /// The f32 absmax values, where they are not double-quantized.
    pub(crate) fn plain_absmax(&self) -> Option<&Buffer<f32>> {
        match &self.scales {
            Scales::Plain(a) => Some(a),
            Scales::Double { .. } => None,
        }
    }

    pub(crate) fn codes(&self) -> &Buffer<u32> {
        &self.codes
    }

    /// Code words: `rows · cols / 8`.
    pub(crate) fn words(&self) -> u32 {
        (self.rows * self.cols / 8) as u32
    }

    pub(crate) fn scale_args(&self) -> ScaleArgs<'_> {
        match &self.scales {
            Scales::Plain(a) => ScaleArgs {
                absmax: a,
                qabs: &self.codes,
                code2: a,
                scale2: a,
                offset: 0.0,
                double: 0,
            },
            Scales::Double {
                q,
                code,
                scale,
                offset,
            } => ScaleArgs {
                absmax: scale,
                qabs: q,
                code2: code,
                scale2: scale,
                offset: *offset,
                double: 1,
            },
        }
    }
}

/// Checks `cols % 64 == 0` and that the element count fits the kernels' u32 indices;
/// returns the code words.
pub(crate) fn check_shape(op: &'static str, rows: usize, cols: usize) -> Result<u32, Error> {
    if !cols.is_multiple_of(BLOCK) {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "NF4 blocks are 64 consecutive weights of a row, but a row holds {cols}; pad the input features to a multiple of 64"
            ),
        });
    }
    match rows.checked_mul(cols) {
        Some(n) if n <= u32::MAX as usize => Ok((n / 8) as u32),
        _ => Err(Error::Unsupported {
            op,
            detail: format!(
                "{rows} × {cols} weights exceed 2^32 elements; split the weight by rows"
            ),
        }),
    }
}

/// Bytes to little-endian words, the last one zero-padded.
fn pack_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// The first `len` bytes of little-endian words.
fn unpack_words(words: &[u32], len: usize) -> Vec<u8> {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take(len)
        .collect()
}

/// At least `n` elements (buffers of length 0 cannot be allocated for empty weights).
trait Pad {
    fn pad(self, n: usize) -> Self;
}

impl<T: Default + Clone> Pad for Vec<T> {
    fn pad(mut self, n: usize) -> Vec<T> {
        if self.len() < n {
            self.resize(n, T::default());
        }
        self
    }
}
