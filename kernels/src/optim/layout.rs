//! Where each parameter tensor lives in the optimizer's flat buffers, and the work table the
//! step kernel reads.

use crate::cast::copy_view;
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, Stream};

/// Every tensor starts at a multiple of this many elements, so 16-byte vectors of f32 and of
/// bf16 are aligned at every tensor start.
pub const TENSOR_ALIGN: usize = 8;
/// Elements per block of the step kernel (a multiple of [`TENSOR_ALIGN`]): a block of 256
/// threads holds a whole chunk in registers, so each block issues all its loads at once.
pub(crate) const CHUNK: usize = 4096;

/// The flat layout of a list of parameter tensors: tensor `i` occupies
/// `offset(i)..offset(i) + len(i)` of every flat buffer (parameters, gradients, moments,
/// bf16 copies). The gaps between tensors are padding the optimizer never touches.
///
/// ```
/// let layout = kernels::optim::ParamLayout::new(&[3, 10, 8]).unwrap();
/// assert_eq!((layout.offset(1), layout.offset(2)), (Some(8), Some(24)));
/// assert_eq!(layout.total(), 32);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    offsets: Vec<usize>,
    lens: Vec<usize>,
    total: usize,
}

impl ParamLayout {
    /// Lays out tensors of the given lengths in order. The flat buffers must hold
    /// [`ParamLayout::total`] elements, at most `u32::MAX`.
    ///
    /// ```
    /// use kernels::optim::ParamLayout;
    /// assert_eq!(ParamLayout::new(&[1, 1]).unwrap().total(), 16);
    /// assert!(ParamLayout::new(&[usize::MAX]).is_err());
    /// ```
    pub fn new(lens: &[usize]) -> Result<ParamLayout, Error> {
        let mut offsets = Vec::with_capacity(lens.len());
        let mut next = 0usize;
        for &len in lens {
            offsets.push(next);
            next = len
                .checked_next_multiple_of(TENSOR_ALIGN)
                .and_then(|padded| next.checked_add(padded))
                .ok_or(Error::Unsupported {
                    op: "ParamLayout::new",
                    detail: "the tensor lengths overflow".into(),
                })?;
        }
        if next > u32::MAX as usize {
            return Err(Error::Unsupported {
                op: "ParamLayout::new",
                detail: format!(
                    "the flat layout needs {next} elements, more than {}; split the parameters into groups",
                    u32::MAX
                ),
            });
        }
        Ok(ParamLayout {
            offsets,
            lens: lens.to_vec(),
            total: next,
        })
    }

    /// First element of tensor `i` (`None` past the last tensor).
    ///
    /// ```
    /// let layout = kernels::optim::ParamLayout::new(&[5, 5]).unwrap();
    /// assert_eq!((layout.offset(1), layout.offset(2)), (Some(8), None));
    /// ```
    pub fn offset(&self, i: usize) -> Option<usize> {
        self.offsets.get(i).copied()
    }

    /// Elements of tensor `i` (`None` past the last tensor).
    ///
    /// ```
    /// assert_eq!(kernels::optim::ParamLayout::new(&[5, 5]).unwrap().len(1), Some(5));
    /// ```
    pub fn len(&self, i: usize) -> Option<usize> {
        self.lens.get(i).copied()
    }

    /// The elements of tensor `i` in the flat buffers (`None` past the last tensor); pass it
    /// to `Buffer::slice` for a view of one tensor.
    ///
    /// ```
    /// let layout = kernels::optim::ParamLayout::new(&[5, 3]).unwrap();
    /// assert_eq!(layout.range(1), Some(8..11));
    /// ```
    pub fn range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        Some(self.offset(i)?..self.offset(i)? + self.len(i)?)
    }

    /// Number of tensors.
    ///
    /// ```
    /// assert_eq!(kernels::optim::ParamLayout::new(&[5, 5]).unwrap().tensors(), 2);
    /// ```
    pub fn tensors(&self) -> usize {
        self.lens.len()
    }

    /// True when there are no tensors.
    ///
    /// ```
    /// assert!(kernels::optim::ParamLayout::new(&[]).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Elements every flat buffer holds, padding included.
    ///
    /// ```
    /// assert_eq!(kernels::optim::ParamLayout::new(&[5, 5]).unwrap().total(), 16);
    /// ```
    pub fn total(&self) -> usize {
        self.total
    }

    /// Copies tensor `i` out of the flat buffer `flat` into `dst` (which holds exactly that
    /// tensor), on the device. With [`ParamLayout::copy_in`] this lets ops that take whole
    /// buffers (a GEMM's weight operand, a norm's γ) read parameters kept in the optimizer's
    /// flat layout and write gradients into it; both are ordinary launches, so they can be
    /// captured in a graph.
    ///
    /// ```
    /// use kernel_runtime::{Buffer, Device};
    /// use kernels::optim::ParamLayout;
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let layout = ParamLayout::new(&[3, 2])?;
    /// let mut host = vec![0.0f32; layout.total()]; // 16: each tensor padded to 8
    /// host[..3].copy_from_slice(&[1.0, 2.0, 3.0]);
    /// host[8..10].copy_from_slice(&[4.0, 5.0]);
    /// let flat = Buffer::from_host(&stream, &host)?;
    /// let mut second = Buffer::<f32>::zeros(&stream, 2)?;
    /// layout.copy_out(&stream, &flat, 1, &mut second)?;
    /// assert_eq!(second.to_host(&stream)?, vec![4.0, 5.0]);
    /// # Ok(()) }
    /// ```
    pub fn copy_out<T: Float>(
        &self,
        stream: &Stream,
        flat: &Buffer<T>,
        i: usize,
        dst: &mut Buffer<T>,
    ) -> Result<(), Error> {
        crate::float::f32_or_bf16::<T>("copy_out")?;
        let range = self.checked_range("ParamLayout::copy_out", i, flat.len(), dst.len())?;
        copy_view::<T>(stream, flat.slice(range)?, dst.view_mut())
    }

    /// Copies `src` (one whole tensor) into tensor `i` of the flat buffer `flat`, on the
    /// device; the rest of `flat`, padding included, is left as it was.
    ///
    /// ```
    /// use kernel_runtime::{Buffer, Device};
    /// use kernels::optim::ParamLayout;
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let layout = ParamLayout::new(&[3, 2])?;
    /// let mut flat = Buffer::<f32>::zeros(&stream, layout.total())?;
    /// let grad = Buffer::from_host(&stream, &[7.0f32, 8.0])?;
    /// layout.copy_in(&stream, &grad, &mut flat, 1)?;
    /// assert_eq!(flat.to_host(&stream)?[8..11], [7.0, 8.0, 0.0]);
    /// assert!(layout.copy_in(&stream, &grad, &mut flat, 0).is_err()); // tensor 0 holds 3
    /// # Ok(()) }
    /// ```
    pub fn copy_in<T: Float>(
        &self,
        stream: &Stream,
        src: &Buffer<T>,
        flat: &mut Buffer<T>,
        i: usize,
    ) -> Result<(), Error> {
        crate::float::f32_or_bf16::<T>("copy_in")?;
        let range = self.checked_range("ParamLayout::copy_in", i, flat.len(), src.len())?;
        copy_view::<T>(stream, src.view(), flat.slice_mut(range)?)
    }

    /// Tensor `i`'s range, after checking that it exists, that `flat` holds the whole layout
    /// and that the per-tensor buffer holds exactly the tensor.
    fn checked_range(
        &self,
        op: &'static str,
        i: usize,
        flat_len: usize,
        tensor_len: usize,
    ) -> Result<std::ops::Range<usize>, Error> {
        let range = self.range(i).ok_or_else(|| Error::Unsupported {
            op,
            detail: format!(
                "tensor {i} does not exist; the layout holds {} tensors",
                self.tensors()
            ),
        })?;
        let total = self.total;
        check_len(op, "flat", flat_len, total, || {
            format!("the layout's total, {total}")
        })?;
        check_len(op, "tensor", tensor_len, range.len(), || {
            format!("the length of tensor {i}")
        })?;
        Ok(range)
    }

    /// The work table: `(start, end, tensor)` per chunk of at most [`CHUNK`] elements, each
    /// inside one tensor, flattened.
    pub(crate) fn chunk_table(&self) -> Vec<u32> {
        let mut table = Vec::new();
        for (i, (&off, &len)) in self.offsets.iter().zip(&self.lens).enumerate() {
            let mut start = off;
            while start < off + len {
                let end = (start + CHUNK).min(off + len);
                table.extend([start as u32, end as u32, i as u32]);
                start = end;
            }
        }
        table
    }
}
