//! Which GEMM operands are stored transposed.

/// How `A` and `B` are stored, all row-major; `C` is always `m × n` row-major.
///
/// The three forms cover a linear layer's forward and both gradients without a transpose
/// kernel: `y = x·Wᵀ` is [`Layout::Nt`], `grad_x = grad_y·W` is [`Layout::Nn`] and
/// `grad_W = grad_yᵀ·x` is [`Layout::Tn`].
///
/// ```
/// use kernels_gen::gemm::Layout;
/// assert_eq!(Layout::Nt.b_rows_cols(5, 3), (5, 3)); // B is stored n × k
/// assert_eq!(Layout::Tn.a_rows_cols(4, 3), (3, 4)); // A is stored k × m
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `C = A·B`: `A` is `m × k`, `B` is `k × n`.
    Nn,
    /// `C = A·Bᵀ`: `A` is `m × k`, `B` is stored `n × k`.
    Nt,
    /// `C = Aᵀ·B`: `A` is stored `k × m`, `B` is `k × n`.
    Tn,
}

impl Layout {
    /// Every layout, in a fixed order.
    pub const ALL: [Layout; 3] = [Layout::Nn, Layout::Nt, Layout::Tn];

    /// Suffix used in entry names.
    pub const fn tag(self) -> &'static str {
        match self {
            Layout::Nn => "nn",
            Layout::Nt => "nt",
            Layout::Tn => "tn",
        }
    }

    /// True when `A` is stored with `k` contiguous (`m × k`).
    pub const fn a_k_contiguous(self) -> bool {
        !matches!(self, Layout::Tn)
    }

    /// True when `B` is stored with `k` contiguous (`n × k`).
    pub const fn b_k_contiguous(self) -> bool {
        matches!(self, Layout::Nt)
    }

    /// Rows and columns of `A` as stored.
    pub const fn a_rows_cols(self, m: usize, k: usize) -> (usize, usize) {
        if self.a_k_contiguous() {
            (m, k)
        } else {
            (k, m)
        }
    }

    /// Rows and columns of `B` as stored.
    pub const fn b_rows_cols(self, n: usize, k: usize) -> (usize, usize) {
        if self.b_k_contiguous() {
            (n, k)
        } else {
            (k, n)
        }
    }
}
