//! Fused epilogues: `C = act(α·A·B + β·C + bias) + residual`, applied to each output element
//! in registers before its single store. Which parts apply is decided at run time by a flags
//! parameter (uniform across the grid), so one kernel serves every combination.

use crate::Float;
use kernel_runtime::Buffer;
use kernels_gen::codegen::math::{GELU_K0, GELU_K1};
use kernels_gen::gemm::epilogue::{ACT_GELU_TANH, ACT_SHIFT, ACT_SILU, FLAG_BIAS, FLAG_RESIDUAL};

/// The activation applied after bias, before the residual add.
///
/// ```
/// use kernels::gemm::Activation;
/// assert_eq!(Activation::default(), Activation::None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Activation {
    #[default]
    None,
    /// `x·σ(x)`.
    Silu,
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh,
}

impl Activation {
    const fn code(self) -> u32 {
        match self {
            Activation::None => 0,
            Activation::Silu => ACT_SILU,
            Activation::GeluTanh => ACT_GELU_TANH,
        }
    }

    /// The activation in f64 (the reference).
    ///
    /// ```
    /// use kernels::gemm::Activation;
    /// assert_eq!(Activation::Silu.apply(0.0), 0.0);
    /// assert!((Activation::GeluTanh.apply(1.0) - 0.841192).abs() < 1e-6);
    /// ```
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Activation::None => x,
            Activation::Silu => x / (1.0 + (-x).exp()),
            Activation::GeluTanh => {
                let k0 = GELU_K0 as f64;
                let k1 = GELU_K1 as f64;
                0.5 * x * (1.0 + (k0 * (x + k1 * x * x * x)).tanh())
            }
        }
    }
}

/// What happens to each product before it is stored, with `T` the input element type (bias
/// and residual are stored as `T`).
///
/// `C = act(alpha·A·B + beta·C + bias[col]) + residual[row, col]`; `C` is read only when
/// `beta ≠ 0`, so an uninitialised `C` is fine with the default `beta = 0`. The residual has
/// `C`'s shape, leading dimension and batch stride; the bias (`n` elements) is shared by every
/// batch.
///
/// ```
/// use kernels::gemm::{Activation, Epilogue};
/// let e = Epilogue::<f32>::default().with_activation(Activation::Silu).scaled(0.5, 1.0);
/// assert_eq!((e.alpha, e.beta, e.activation), (0.5, 1.0, Activation::Silu));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a, T: Float> {
    /// Scales the product.
    pub alpha: f32,
    /// Scales the old `C` (not read when 0).
    pub beta: f32,
    /// `n` values added per column.
    pub bias: Option<&'a Buffer<T>>,
    pub activation: Activation,
    /// Added last, laid out like `C`.
    pub residual: Option<&'a Buffer<T>>,
}

impl<T: Float> Default for Epilogue<'_, T> {
    fn default() -> Self {
        Epilogue {
            alpha: 1.0,
            beta: 0.0,
            bias: None,
            activation: Activation::None,
            residual: None,
        }
    }
}

impl<'a, T: Float> Epilogue<'a, T> {
    /// Sets `alpha` and `beta`.
    pub fn scaled(mut self, alpha: f32, beta: f32) -> Self {
        self.alpha = alpha;
        self.beta = beta;
        self
    }

    /// Adds `bias[col]` to each product.
    pub fn with_bias(mut self, bias: &'a Buffer<T>) -> Self {
        self.bias = Some(bias);
        self
    }

    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Adds `residual[row, col]` last.
    pub fn with_residual(mut self, residual: &'a Buffer<T>) -> Self {
        self.residual = Some(residual);
        self
    }

    /// True when the epilogue is the identity: α = 1, β = 0, no bias, activation or residual.
    pub(crate) fn is_plain(&self) -> bool {
        self.alpha == 1.0
            && self.beta == 0.0
            && self.bias.is_none()
            && self.residual.is_none()
            && self.activation == Activation::None
    }

    /// The flags parameter of the kernel (without the vector bits).
    pub(crate) fn flags(&self) -> u32 {
        let mut f = self.activation.code() << ACT_SHIFT;
        if self.bias.is_some() {
            f |= FLAG_BIAS;
        }
        if self.residual.is_some() {
            f |= FLAG_RESIDUAL;
        }
        f
    }
}
