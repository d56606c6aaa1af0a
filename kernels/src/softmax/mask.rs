//! Which entries of a row take part in the softmax.

use crate::Error;

/// Which entries of each row take part; the others count as −∞ and come out 0.
///
/// ```
/// use kernels::softmax::Mask;
/// // 4 queries over 6 keys: query q sees keys 0..=q + 2.
/// assert_eq!(Mask::Causal { queries: 4 }.limit(1, 6), 3);
/// assert_eq!(Mask::None.limit(1, 6), 5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every entry.
    None,
    /// Causal attention scores, aligned bottom-right: the rows are stacked `queries × cols`
    /// score matrices (`rows` a multiple of `queries`, `queries ≤ cols`), row `r` is query
    /// `q = r mod queries`, and it sees keys `0 ..= q + cols − queries` (the queries are the
    /// last `queries` of the `cols` keys, as in prefill and decode with a KV cache).
    Causal { queries: usize },
}

impl Mask {
    /// The last column row `row` of a `cols`-wide problem sees.
    pub fn limit(self, row: usize, cols: usize) -> usize {
        match self {
            Mask::None => cols.saturating_sub(1),
            Mask::Causal { queries } => (row % queries.max(1)) + cols.saturating_sub(queries),
        }
    }

    /// `(queries, offset)` as the kernel takes them, after checking the mask fits the shape.
    pub(crate) fn kernel_params(
        self,
        op: &'static str,
        rows: usize,
        cols: usize,
    ) -> Result<(u32, u32), Error> {
        match self {
            Mask::None => Ok((1, (cols - 1) as u32)),
            Mask::Causal { queries } => {
                if queries == 0 || queries > cols || !rows.is_multiple_of(queries) {
                    return Err(Error::Unsupported {
                        op,
                        detail: format!(
                            "a causal mask over {queries} queries needs 1 ≤ queries ≤ cols \
                             ({cols}) and rows ({rows}) a multiple of queries; pass the number \
                             of query rows of each score matrix"
                        ),
                    });
                }
                Ok((queries as u32, (cols - queries) as u32))
            }
        }
    }
}
