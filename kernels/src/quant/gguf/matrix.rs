//! A `rows × cols` weight matrix in a GGUF format: its bytes on the host ([`GgufMatrix`]) and
//! on the device ([`GgufWeights`]).

use super::{BlockQ4K, BlockQ6K, BlockQ8_0, GgufFormat};
use crate::Error;
use kernel_runtime::{Buffer, Stream};

/// A row-major `rows × cols` matrix of quantized weights, as a GGUF file stores a tensor of
/// shape `[cols, rows]` (ggml lists the fastest dimension first): the blocks of row 0, then
/// row 1, … Each row is `cols / block_len` whole blocks, so `cols` is a multiple of the
/// format's block length (32 for Q8_0, 256 for the K formats).
///
/// ```
/// use kernels::quant::gguf::{GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// // Each block of 32 holds 127, so its scale is 1 and its integers survive Q8_0 exactly.
/// let w: Vec<f32> = (0..2 * 256)
///     .map(|i| if i % 32 == 0 { 127.0 } else { (i % 7) as f32 - 3.0 })
///     .collect();
/// let q = GgufMatrix::quantize(GgufFormat::Q8_0, 2, 256, &w)?;
/// assert_eq!(q.bytes().len(), 2 * 8 * 34);
/// assert_eq!(q.dequantize(), w);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufMatrix {
    format: GgufFormat,
    rows: usize,
    cols: usize,
    bytes: Vec<u8>,
}

fn check_shape(op: &'static str, format: GgufFormat, cols: usize) -> Result<(), Error> {
    if !cols.is_multiple_of(format.block_len()) {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "{format} rows hold whole blocks of {} weights, but cols = {cols}; pad each row to a multiple of {}",
                format.block_len(),
                format.block_len()
            ),
        });
    }
    Ok(())
}

impl GgufMatrix {
    /// Wraps the bytes of a tensor read from a GGUF file; the length must be exactly
    /// `rows · row_bytes(cols)`.
    pub fn from_bytes(
        format: GgufFormat,
        rows: usize,
        cols: usize,
        bytes: Vec<u8>,
    ) -> Result<GgufMatrix, Error> {
        check_shape("GgufMatrix::from_bytes", format, cols)?;
        crate::check_len(
            "GgufMatrix::from_bytes",
            "bytes",
            bytes.len(),
            rows * format.row_bytes(cols),
            || format!("{rows} rows of {cols} {format} weights"),
        )?;
        Ok(GgufMatrix {
            format,
            rows,
            cols,
            bytes,
        })
    }

    /// Quantizes the row-major `rows × cols` matrix `w` with the format's reference quantizer.
    pub fn quantize(
        format: GgufFormat,
        rows: usize,
        cols: usize,
        w: &[f32],
    ) -> Result<GgufMatrix, Error> {
        check_shape("GgufMatrix::quantize", format, cols)?;
        crate::check_len("GgufMatrix::quantize", "w", w.len(), rows * cols, || {
            format!("rows × cols = {rows} × {cols}")
        })?;
        let (n, size) = (format.block_len(), format.block_bytes());
        let mut bytes = vec![0u8; w.len() / n * size];
        for (x, out) in w.chunks_exact(n).zip(bytes.chunks_exact_mut(size)) {
            match format {
                GgufFormat::Q8_0 => BlockQ8_0::quantize(x.try_into().expect("32"))
                    .write(out.try_into().expect("34")),
                GgufFormat::Q4K => BlockQ4K::quantize(x.try_into().expect("256"))
                    .write(out.try_into().expect("144")),
                GgufFormat::Q6K => BlockQ6K::quantize(x.try_into().expect("256"))
                    .write(out.try_into().expect("210")),
            }
        }
        Ok(GgufMatrix {
            format,
            rows,
            cols,
            bytes,
        })
    }

    /// One matrix holding the rows of `parts` one after another (the first's rows, then the
    /// second's, …): the weight that [`gemv_mma_parts`](super::gemv_mma_parts) and
    /// [`gemv_mma_swiglu`](super::gemv_mma_swiglu) read several products from in one launch.
    /// The parts must share the format and the columns.
    ///
    /// ```
    /// use kernels::quant::gguf::{GgufFormat, GgufMatrix};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let a = GgufMatrix::quantize(GgufFormat::Q8_0, 2, 32, &[1.0; 64])?;
    /// let b = GgufMatrix::quantize(GgufFormat::Q8_0, 1, 32, &[-2.0; 32])?;
    /// let ab = GgufMatrix::stack(&[&a, &b])?;
    /// assert_eq!((ab.rows(), ab.cols()), (3, 32));
    /// assert_eq!(ab.dequantize(), [a.dequantize(), b.dequantize()].concat());
    /// assert!(GgufMatrix::stack(&[&a, &GgufMatrix::quantize(GgufFormat::Q8_0, 1, 64, &[0.0; 64])?]).is_err());
    /// # Ok(()) }
    /// ```
    pub fn stack(parts: &[&GgufMatrix]) -> Result<GgufMatrix, Error> {
        const OP: &str = "GgufMatrix::stack";
        let Some(first) = parts.first() else {
            return Err(Error::Unsupported {
                op: OP,
                detail: "no matrices to stack: give one or more".into(),
            });
        };
        for (i, p) in parts.iter().enumerate() {
            if p.format != first.format || p.cols != first.cols {
                return Err(Error::Unsupported {
                    op: OP,
                    detail: format!(
                        "part {i} is {} with {} columns, part 0 {} with {}: stacked parts share the format and the columns",
                        p.format, p.cols, first.format, first.cols
                    ),
                });
            }
        }
        Ok(GgufMatrix {
            format: first.format,
            rows: parts.iter().map(|p| p.rows).sum(),
            cols: first.cols,
            bytes: parts.iter().flat_map(|p| p.bytes.iter().copied()).collect(),
        })
    }

    /// The weights, row-major, decoded block by block as ggml's reference dequantizers do.
    pub fn dequantize(&self) -> Vec<f32> {
        let (n, size) = (self.format.block_len(), self.format.block_bytes());
        let mut w = vec![0.0f32; self.rows * self.cols];
        for (b, out) in self.bytes.chunks_exact(size).zip(w.chunks_exact_mut(n)) {
            match self.format {
                GgufFormat::Q8_0 => {
                    out.copy_from_slice(&BlockQ8_0::read(b.try_into().expect("34")).dequantize())
                }
                GgufFormat::Q4K => {
                    out.copy_from_slice(&BlockQ4K::read(b.try_into().expect("144")).dequantize())
                }
                GgufFormat::Q6K => {
                    out.copy_from_slice(&BlockQ6K::read(b.try_into().expect("210")).dequantize())
                }
            }
        }
        w
    }

    /// The weights, row-major, as [`gemv_mma`](super::gemv_mma) multiplies them: bf16 values
    /// ([`BlockQ8_0::bf16_operand`], [`BlockQ4K::bf16_operand`], [`BlockQ6K::bf16_operand`]).
    pub fn bf16_operand(&self) -> Vec<f32> {
        let n = self.format.block_bytes();
        let blocks = self.bytes.chunks_exact(n);
        match self.format {
            GgufFormat::Q8_0 => blocks
                .flat_map(|b| BlockQ8_0::read(b.try_into().expect("34")).bf16_operand())
                .collect(),
            GgufFormat::Q4K => blocks
                .flat_map(|b| BlockQ4K::read(b.try_into().expect("144")).bf16_operand())
                .collect(),
            GgufFormat::Q6K => blocks
                .flat_map(|b| BlockQ6K::read(b.try_into().expect("210")).bf16_operand())
                .collect(),
        }
    }

    /// The format.
    pub fn format(&self) -> GgufFormat {
        self.format
    }
    /// Rows (output features).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns (input features).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// The raw blocks, row after row.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Copies the blocks to the device (see [`GgufWeights`]).
    pub fn to_device(&self, stream: &Stream) -> Result<GgufWeights, Error> {
        // Little-endian words, and 16 zero bytes past the end so that a thread reading a
        // 2-byte-aligned field as whole words never reads outside the buffer.
        let mut words = vec![0u32; self.bytes.len().div_ceil(16) * 4 + 4];
        for (w, b) in words.iter_mut().zip(self.bytes.chunks(4)) {
            let mut le = [0u8; 4];
            le[..b.len()].copy_from_slice(b);
            *w = u32::from_le_bytes(le);
        }
        Ok(GgufWeights {
            format: self.format,
            rows: self.rows,
            cols: self.cols,
            words: Buffer::from_host(stream, &words)?,
        })
    }
}

/// What decides which GEMV can read quantized weights: their format and shape, the same on
/// the host ([`GgufMatrix`]) as on the device ([`GgufWeights`]), so that a caller can ask
/// before it uploads.
pub trait GgufShape {
    /// The format.
    fn format(&self) -> GgufFormat;
    /// Rows (output features).
    fn rows(&self) -> usize;
    /// Columns (input features).
    fn cols(&self) -> usize;
}

impl GgufShape for GgufMatrix {
    fn format(&self) -> GgufFormat {
        self.format
    }
    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
}

impl<S: GgufShape + ?Sized> GgufShape for &S {
    fn format(&self) -> GgufFormat {
        (**self).format()
    }
    fn rows(&self) -> usize {
        (**self).rows()
    }
    fn cols(&self) -> usize {
        (**self).cols()
    }
}

impl GgufShape for GgufWeights {
    fn format(&self) -> GgufFormat {
        self.format
    }
    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
}

/// A [`GgufMatrix`] on the device: the same bytes as little-endian 32-bit words (kernels read
/// whole words and take fields apart in registers), zero-padded by at least 16 bytes.
///
/// Written once, by the upload in [`GgufMatrix::to_device`], and by no kernel: [`super::gemv`]
/// and [`super::gemv_q8`] rely on it, loading their first weights before they wait for the
/// kernel launched ahead of them (programmatic dependent launch, sm_90+), so that the weights
/// stream in while it finishes.
pub struct GgufWeights {
    format: GgufFormat,
    rows: usize,
    cols: usize,
    words: Buffer<u32>,
}

impl GgufWeights {
    /// The format.
    pub fn format(&self) -> GgufFormat {
        self.format
    }
    /// Rows (output features, `N` of a product).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns (input features, `K` of a product).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Bytes of the quantized weights (without the padding).
    pub fn quantized_bytes(&self) -> usize {
        self.rows * self.format.row_bytes(self.cols)
    }
    /// The words, for the kernels.
    pub(crate) fn words(&self) -> &Buffer<u32> {
        &self.words
    }
}
