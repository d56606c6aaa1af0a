//! The f64 CPU reference of [`super::gemm`].

use super::epilogue::Activation;
use super::layout::GemmShape;

/// The epilogue in plain values, for the reference.
#[derive(Clone, Debug, Default)]
pub struct RefEpilogue {
    /// Scales the product (note: the `Default` is 0; use [`RefEpilogue::plain`]).
    pub alpha: f64,
    pub beta: f64,
    pub bias: Option<Vec<f64>>,
    pub activation: Activation,
    pub residual: Option<Vec<f64>>,
}

impl RefEpilogue {
    /// `alpha = 1`, nothing else.
    pub fn plain() -> RefEpilogue {
        RefEpilogue {
            alpha: 1.0,
            ..RefEpilogue::default()
        }
    }
}

/// `c` after `C = act(alpha·op(A)·op(B) + beta·C + bias) + residual` over every batch; elements
/// of `c` outside the matrices (padding between rows and batches) are left as they are.
///
/// ```
/// use kernels::gemm::{reference::{gemm, RefEpilogue}, GemmShape, Layout};
/// let mut c = vec![f64::NAN; 1];
/// gemm(&GemmShape::new(Layout::Nn, 1, 1, 2), &[1.0, 2.0], &[3.0, 4.0], &mut c, &RefEpilogue::plain());
/// assert_eq!(c, vec![11.0]);
/// ```
pub fn gemm(shape: &GemmShape, a: &[f64], b: &[f64], c: &mut [f64], epi: &RefEpilogue) {
    let s = shape;
    let a_k = s.layout.a_k_contiguous();
    let b_k = s.layout.b_k_contiguous();
    for batch in 0..s.batch {
        let (oa, ob, oc) = (batch * s.stride_a, batch * s.stride_b, batch * s.stride_c);
        for i in 0..s.m {
            for j in 0..s.n {
                let mut acc = 0.0;
                for p in 0..s.k {
                    let x = if a_k {
                        a[oa + i * s.lda + p]
                    } else {
                        a[oa + p * s.lda + i]
                    };
                    let y = if b_k {
                        b[ob + j * s.ldb + p]
                    } else {
                        b[ob + p * s.ldb + j]
                    };
                    acc += x * y;
                }
                let idx = oc + i * s.ldc + j;
                let mut v = epi.alpha * acc;
                if epi.beta != 0.0 {
                    v += epi.beta * c[idx];
                }
                if let Some(bias) = &epi.bias {
                    v += bias[j];
                }
                v = epi.activation.apply(v);
                if let Some(r) = &epi.residual {
                    v += r[idx];
                }
                c[idx] = v;
            }
        }
    }
}
