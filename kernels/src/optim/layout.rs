//! Where each parameter tensor lives in the optimizer's flat buffers, and the work table the
//! step kernel reads.

use crate::Error;

/// Every tensor starts at a multiple of this many elements, so 16-byte vectors of f32 and of
/// bf16 are aligned at every tensor start.
pub const TENSOR_ALIGN: usize = 8;
/// Elements per CTA of the step kernel (a multiple of [`TENSOR_ALIGN`]).
pub(crate) const CHUNK: usize = 8192;

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
