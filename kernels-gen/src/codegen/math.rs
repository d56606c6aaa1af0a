//! Float helpers: IEEE square root and reciprocal, `exp` through `ex2.approx`, and the
//! activations built on it.

use super::fresh;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::{ApproxFn, DivMode, Op, Rounding};
use kernel_dsl::scalar::{Float, F32};
use kernel_dsl::ScalarType;

/// `sqrt.rn.f32` or `sqrt.rn.f64`: correctly rounded, as Rust's `sqrt`.
pub fn sqrt<T: Float>(b: &mut KernelBuilder, v: Value<T>) -> Value<T> {
    let d = fresh::<T>(b);
    b.inst(
        Op::SqrtIeee {
            ty: T::TY,
            rnd: Rounding::Rn,
            ftz: false,
        },
        vec![d.reg().into()],
        vec![v.reg().into()],
    );
    d
}

/// `rcp.rn.f32`: correctly rounded.
pub fn rcp(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let d = fresh::<F32>(b);
    b.inst(
        Op::RcpIeee {
            ty: ScalarType::F32,
            rnd: Rounding::Rn,
            ftz: false,
        },
        vec![d.reg().into()],
        vec![v.reg().into()],
    );
    d
}

/// `1 / sqrt(v)` from the two correctly rounded steps (once per row, so precision wins over
/// `rsqrt.approx`); the language's `rsqrt_rn`, under the same name.
pub fn rsqrt_rn(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let s = sqrt(b, v);
    rcp(b, s)
}

/// `2^v` with `ex2.approx.ftz.f32`: one MUFU instruction, where the form without `.ftz` adds a
/// compare and two predicated multiplies to keep subnormal results. Results under 2⁻¹²⁶ come
/// out 0, which none of the library's uses can tell apart (softmax weights, activations).
pub fn ex2(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let d = fresh::<F32>(b);
    b.inst(
        Op::Approx {
            func: ApproxFn::Ex2,
            ty: ScalarType::F32,
            ftz: true,
        },
        vec![d.reg().into()],
        vec![v.reg().into()],
    );
    d
}

/// `e^v` as `2^(v·log2 e)` with [`ex2`] (relative error about 2⁻²²).
pub fn exp(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let log2e = b.const_f32(std::f32::consts::LOG2_E);
    let t = b.mul(v, log2e);
    ex2(b, t)
}

/// `div.full.f32`: within 2 ulp, a few instructions instead of the IEEE division's
/// subroutine (elementwise activations run it per element).
pub fn div_full(b: &mut KernelBuilder, a: Value<F32>, d: Value<F32>) -> Value<F32> {
    let q = fresh::<F32>(b);
    b.inst(
        Op::Div {
            ty: ScalarType::F32,
            mode: DivMode::Full,
            ftz: false,
        },
        vec![q.reg().into()],
        vec![a.reg().into(), d.reg().into()],
    );
    q
}

/// The logistic function `1 / (1 + e^-v)`; saturates cleanly at ±∞.
pub fn sigmoid(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let n = b.neg(v);
    let e = exp(b, n);
    let one = b.const_f32(1.0);
    let d = b.add(one, e);
    div_full(b, one, d)
}

/// `tanh(v) = 1 - 2 / (e^{2v} + 1)`: exact limits ±1, absolute error near 1e-7.
pub fn tanh(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let two = b.const_f32(2.0);
    let one = b.const_f32(1.0);
    let t = b.mul(v, two);
    let e = exp(b, t);
    let d = b.add(e, one);
    let q = div_full(b, two, d);
    b.sub(one, q)
}

/// √(2/π), the GELU tanh-form constant.
pub const GELU_K0: f32 = 0.797_884_6;
/// The cubic coefficient of the GELU tanh form.
pub const GELU_K1: f32 = 0.044_715;
