//! [`QuantizedActivations`]: the rows of `x` as int8 blocks of 32 on the device, the input of
//! [`gemv_q8`](super::gemv_q8).

use super::reference::Int8Activations;
use crate::Error;
use kernel_runtime::{Buffer, Stream};

/// Up to `rows` rows of `cols` activations quantized to int8 in blocks of 32, on the device:
/// per block a scale `d = max|x| / 127`, the 32 values `q = round_ties_even(x / d)` (ties to
/// even, `x · (1/d)` in f32) and `s = d·Σq` in f32. A Q4_K weight `a·u − b` meets a block as
/// `a·d·Σ q·u − b·s`, so its min term is the int8 model's exactly, up to the rounding of `s`.
///
/// Made once for the largest `m` and reused: [`quantize_activations`](super::quantize_activations)
/// overwrites its first `m` rows and allocates nothing, so it can be captured in a graph.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{quantize_activations, QuantizedActivations};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let mut xq = QuantizedActivations::new(&stream, 1, 256)?;
/// let x: Vec<f32> = (0..256).map(|i| (i % 32) as f32 - 16.0).collect();
/// quantize_activations(&stream, &Buffer::from_host(&stream, &x)?, &mut xq, 1)?;
/// let host = xq.to_host(&stream)?;
/// assert_eq!(host.d[0], 16.0 / 127.0);
/// assert_eq!(host.q[0], -127);
/// # Ok(()) }
/// ```
pub struct QuantizedActivations {
    rows: usize,
    cols: usize,
    /// `rows × cols / 4` words, four int8 each, little-endian.
    values: Buffer<u32>,
    /// `rows × cols / 32` pairs `(d, s)`.
    scales: Buffer<f32>,
}

impl QuantizedActivations {
    /// A workspace for up to `rows` rows of `cols` activations; `cols` a multiple of 256, the
    /// block of the K formats (a Q8_0 row of other lengths takes the f32 [`gemv`](super::gemv)).
    pub fn new(stream: &Stream, rows: usize, cols: usize) -> Result<QuantizedActivations, Error> {
        const OP: &str = "QuantizedActivations::new";
        if !cols.is_multiple_of(256) {
            return Err(Error::Unsupported {
                op: OP,
                detail: format!(
                    "cols = {cols}, but int8 activations come in whole blocks of 256; pad the rows to a multiple of 256 or use gguf::gemv"
                ),
            });
        }
        if u32::try_from(rows * cols).is_err() {
            return Err(Error::Unsupported {
                op: OP,
                detail: format!(
                    "rows × cols = {rows} × {cols} does not fit 32-bit indexing; make fewer rows"
                ),
            });
        }
        Ok(QuantizedActivations {
            rows,
            cols,
            values: Buffer::zeros(stream, rows * cols / 4)?,
            scales: Buffer::zeros(stream, rows * cols / 16)?,
        })
    }

    /// The most rows it holds.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Activations per row (`K` of the product).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Copies every row back to the host (the rows never written are zeros).
    pub fn to_host(&self, stream: &Stream) -> Result<Int8Activations, Error> {
        let words = self.values.to_host(stream)?;
        let pairs = self.scales.to_host(stream)?;
        Ok(Int8Activations {
            rows: self.rows,
            cols: self.cols,
            q: words
                .iter()
                .flat_map(|w| w.to_le_bytes().map(|b| b as i8))
                .collect(),
            d: pairs.iter().step_by(2).copied().collect(),
            s: pairs.iter().skip(1).step_by(2).copied().collect(),
        })
    }

    pub(crate) fn values_mut(&mut self) -> (&mut Buffer<u32>, &mut Buffer<f32>) {
        (&mut self.values, &mut self.scales)
    }

    pub(crate) fn values(&self) -> (&Buffer<u32>, &Buffer<f32>) {
        (&self.values, &self.scales)
    }
}
