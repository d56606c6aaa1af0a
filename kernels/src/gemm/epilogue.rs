//! Fused epilogues: `C = act(α·A·B + β·C + bias) + residual`, applied to each output element
//! in registers before its single store. Which parts apply is decided at run time by a flags
//! parameter (uniform across the grid), so one kernel serves every combination.

use super::element::GemmElement;
use super::matrix::Mat;
use crate::codegen::math::{sigmoid, tanh, GELU_K0, GELU_K1};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{Pred, F32, U32};
use kernel_dsl::op::Cmp;
use kernel_runtime::Buffer;

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
            Activation::Silu => 1,
            Activation::GeluTanh => 2,
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
pub struct Epilogue<'a, T: GemmElement> {
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

impl<T: GemmElement> Default for Epilogue<'_, T> {
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

impl<'a, T: GemmElement> Epilogue<'a, T> {
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

pub(crate) const FLAG_BIAS: u32 = 1;
pub(crate) const FLAG_RESIDUAL: u32 = 2;
const ACT_SHIFT: u32 = 2;
/// `A` may be read in 16-byte vectors (aligned leading dimension, stride and extent).
pub(crate) const FLAG_VEC_A: u32 = 16;
pub(crate) const FLAG_VEC_B: u32 = 32;
/// `C = A·B` exactly (α = 1, β = 0, nothing fused) with even `ldc` and batch stride, so two
/// adjacent output elements can be stored as one aligned pair.
pub(crate) const FLAG_PLAIN_PAIRS: u32 = 64;

/// The epilogue's inputs inside a kernel, with its uniform predicates computed once.
pub(crate) struct EpilogueCode {
    pub c: Mat,
    pub bias: Mat,
    pub residual: Mat,
    alpha: Value<F32>,
    beta: Value<F32>,
    read_c: Value<Pred>,
    has_bias: Value<Pred>,
    has_residual: Value<Pred>,
    silu: Value<Pred>,
    gelu: Value<Pred>,
}

/// `(flags & mask) != 0`.
pub(crate) fn flag(b: &mut KernelBuilder, flags: Value<U32>, mask: u32) -> Value<Pred> {
    let m = b.const_u32(mask);
    let bits = b.and(flags, m);
    let zero = b.const_u32(0);
    b.setp(Cmp::Ne, bits, zero)
}

impl EpilogueCode {
    pub(crate) fn new(
        b: &mut KernelBuilder,
        c: Mat,
        bias: Mat,
        residual: Mat,
        alpha: Value<F32>,
        beta: Value<F32>,
        flags: Value<U32>,
    ) -> EpilogueCode {
        let zero = b.const_f32(0.0);
        let read_c = b.setp(Cmp::Ne, beta, zero);
        let has_bias = flag(b, flags, FLAG_BIAS);
        let has_residual = flag(b, flags, FLAG_RESIDUAL);
        let act = b.shr(flags, ACT_SHIFT);
        let three = b.const_u32(3);
        let act = b.and(act, three);
        let one = b.const_u32(Activation::Silu.code());
        let two = b.const_u32(Activation::GeluTanh.code());
        let silu = b.setp(Cmp::Eq, act, one);
        let gelu = b.setp(Cmp::Eq, act, two);
        EpilogueCode {
            c,
            bias,
            residual,
            alpha,
            beta,
            read_c,
            has_bias,
            has_residual,
            silu,
            gelu,
        }
    }

    /// Finishes and stores output element `index` (column `col`) from its accumulator.
    pub(crate) fn store(
        &self,
        b: &mut KernelBuilder,
        index: Value<U32>,
        col: Value<U32>,
        acc: Value<F32>,
    ) {
        let scaled = b.mul(self.alpha, acc);
        let v = b.var(scaled);
        b.if_(self.read_c, |b| {
            let old = self.c.load(b, index);
            let t = b.fma(self.beta, old, v);
            b.assign(v, t);
        });
        b.if_(self.has_bias, |b| {
            let bias = self.bias.load(b, col);
            let t = b.add(v, bias);
            b.assign(v, t);
        });
        b.if_(self.silu, |b| {
            let s = sigmoid(b, v);
            let t = b.mul(v, s);
            b.assign(v, t);
        });
        b.if_(self.gelu, |b| {
            let t = gelu_tanh(b, v);
            b.assign(v, t);
        });
        b.if_(self.has_residual, |b| {
            let r = self.residual.load(b, index);
            let t = b.add(v, r);
            b.assign(v, t);
        });
        self.c.store(b, index, v);
    }
}

fn gelu_tanh(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let k0 = b.const_f32(GELU_K0);
    let k1 = b.const_f32(GELU_K1);
    let half = b.const_f32(0.5);
    let one = b.const_f32(1.0);
    let x2 = b.mul(x, x);
    let x3 = b.mul(x2, x);
    let inner = b.fma(k1, x3, x);
    let arg = b.mul(k0, inner);
    let t = tanh(b, arg);
    let s = b.add(one, t);
    let hx = b.mul(half, x);
    b.mul(hx, s)
}
