//! The GEMM problem shape and the checks that a problem fits its buffers.

use crate::Error;
use kernels_gen::gemm::Layout;

/// The sizes of a (batched, strided) GEMM: `batch` independent products `C_i = op(A_i)·op(B_i)`,
/// matrix `i` of each operand starting `i · stride` elements into its buffer.
///
/// ```
/// use kernels::gemm::{GemmShape, Layout};
/// let s = GemmShape::new(Layout::Nn, 4, 5, 6);
/// assert_eq!((s.lda, s.ldb, s.ldc), (6, 5, 5));
/// let s = GemmShape::batched(Layout::Nt, 2, 4, 5, 6);
/// assert_eq!((s.stride_a, s.stride_b, s.stride_c), (24, 30, 20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    pub layout: Layout,
    /// Rows of `C`.
    pub m: usize,
    /// Columns of `C`.
    pub n: usize,
    /// The reduced dimension.
    pub k: usize,
    /// Elements between consecutive stored rows of `A` (≥ its stored column count).
    pub lda: usize,
    /// Elements between consecutive stored rows of `B`.
    pub ldb: usize,
    /// Elements between consecutive rows of `C` (and of the epilogue's residual).
    pub ldc: usize,
    /// Independent products; each runs as its own slice of the grid.
    pub batch: usize,
    /// Elements from one batch's `A` to the next.
    pub stride_a: usize,
    pub stride_b: usize,
    /// Elements from one batch's `C` (and residual) to the next.
    pub stride_c: usize,
}

impl GemmShape {
    /// One dense row-major product.
    pub const fn new(layout: Layout, m: usize, n: usize, k: usize) -> GemmShape {
        GemmShape::batched(layout, 1, m, n, k)
    }

    /// `batch` dense row-major products stored back to back. A stride that would overflow
    /// `usize` saturates, and [`crate::gemm::gemm`] refuses it with an error (no panic).
    pub const fn batched(layout: Layout, batch: usize, m: usize, n: usize, k: usize) -> GemmShape {
        let (_, a_cols) = layout.a_rows_cols(m, k);
        let (_, b_cols) = layout.b_rows_cols(n, k);
        GemmShape {
            layout,
            m,
            n,
            k,
            lda: a_cols,
            ldb: b_cols,
            ldc: n,
            batch,
            stride_a: m.saturating_mul(k),
            stride_b: n.saturating_mul(k),
            stride_c: m.saturating_mul(n),
        }
    }

    /// Multiply-adds of the whole problem times two.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// True when nothing is computed (an empty output).
    pub fn is_empty(&self) -> bool {
        self.m == 0 || self.n == 0 || self.batch == 0
    }

    /// Checks leading dimensions and strides and that each buffer holds the problem.
    pub(crate) fn check(
        &self,
        op: &'static str,
        a_len: usize,
        b_len: usize,
        c_len: usize,
    ) -> Result<(), Error> {
        let (ar, ac) = self.layout.a_rows_cols(self.m, self.k);
        let (br, bc) = self.layout.b_rows_cols(self.n, self.k);
        let ops = [
            ("a", ar, ac, self.lda, self.stride_a, a_len),
            ("b", br, bc, self.ldb, self.stride_b, b_len),
            ("c", self.m, self.n, self.ldc, self.stride_c, c_len),
        ];
        for (name, rows, cols, ld, stride, len) in ops {
            if rows > 0 && ld < cols {
                return Err(Error::Unsupported {
                    op,
                    detail: format!(
                        "the leading dimension of `{name}` is {ld} but its rows hold {cols} elements; pass ld{name} >= {cols}"
                    ),
                });
            }
            let need = extent(rows, cols, ld, self.batch, stride);
            if need > u32::MAX as usize || stride > u32::MAX as usize {
                return Err(Error::Unsupported {
                    op,
                    detail: format!(
                        "`{name}` spans {need} elements (stride {stride}); matrices and strides must stay below 2^32 elements, so split the batch"
                    ),
                });
            }
            if len < need {
                return Err(Error::Length {
                    op,
                    buffer: name,
                    expected: need,
                    actual: len,
                    why: format!(
                        "at least: {} × {rows} × {cols} with leading dimension {ld} and batch stride {stride}",
                        self.batch
                    ),
                });
            }
        }
        if self.batch > 65_535 {
            return Err(Error::Unsupported {
                op,
                detail: format!(
                    "batch {} exceeds 65535; split it into several calls",
                    self.batch
                ),
            });
        }
        if self.m.div_ceil(16) > 65_535 {
            return Err(Error::Unsupported {
                op,
                detail: format!(
                    "m = {} exceeds {}; split the rows into several calls",
                    self.m,
                    65_535 * 16
                ),
            });
        }
        Ok(())
    }
}

/// Elements from the first to one past the last element touched, or 0 when nothing is;
/// `usize::MAX` where that overflows (larger than any buffer, so a caller's check refuses it).
pub(crate) fn extent(rows: usize, cols: usize, ld: usize, batch: usize, stride: usize) -> usize {
    if rows == 0 || cols == 0 || batch == 0 {
        return 0;
    }
    (batch - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add((rows - 1).checked_mul(ld)?))
        .and_then(|x| x.checked_add(cols))
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_one_element_short_is_a_length_error_naming_the_need() {
        let s = GemmShape::new(Layout::Nn, 3, 4, 5);
        let err = s.check("gemm", 14, 20, 12).unwrap_err();
        assert!(
            err.to_string().contains("`a` holds 14 elements but 15"),
            "{err}"
        );
        assert!(s.check("gemm", 15, 20, 12).is_ok());
    }

    #[test]
    fn a_leading_dimension_below_the_row_width_is_rejected() {
        let mut s = GemmShape::new(Layout::Tn, 3, 4, 5);
        s.lda = 2;
        let err = s.check("gemm", 100, 100, 100).unwrap_err();
        assert!(err.to_string().contains("lda >= 3"), "{err}");
    }

    /// Sizes whose products overflow `usize` are an error naming the limit, not a panic.
    #[test]
    fn sizes_that_overflow_are_refused_without_a_panic() {
        for (m, n, k) in [
            (1 << 33, 1, 1 << 33),
            (usize::MAX, 2, 2),
            (2, usize::MAX, usize::MAX),
        ] {
            for layout in Layout::ALL {
                let s = GemmShape::batched(layout, 3, m, n, k);
                let err = s
                    .check("gemm", usize::MAX, usize::MAX, usize::MAX)
                    .unwrap_err();
                assert!(err.to_string().contains("below 2^32"), "{m} {n} {k}: {err}");
            }
        }
    }

    #[test]
    fn strided_batches_need_room_for_the_last_matrix() {
        let s = GemmShape::batched(Layout::Nt, 3, 2, 2, 2);
        assert!(s.check("gemm", 12, 12, 12).is_ok());
        assert!(s.check("gemm", 12, 12, 11).is_err());
    }
}
