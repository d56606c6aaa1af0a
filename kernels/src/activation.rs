//! `#[device]` activation functions shared by the elementwise kernels and the kernels that
//! apply an activation in their epilogue (the GGUF GEMV's SwiGLU pair), so both round alike.

use kernel_macros::device;

/// `e^v` through `ex2.approx.ftz` (relative error about 2⁻²²; results under 2⁻¹²⁶ are 0,
/// which no activation can tell apart).
#[device(crate = crate::lang)]
pub(crate) fn exp_fast(v: f32) -> f32 {
    ex2_approx_ftz(v * 1.442_695_04)
}

/// The logistic function `1 / (1 + e^-v)`; saturates cleanly at ±∞.
#[device(crate = crate::lang)]
pub(crate) fn sigmoid(v: f32) -> f32 {
    div_full(1.0, 1.0 + exp_fast(-v))
}

/// `tanh(v) = 1 − 2 / (e^{2v} + 1)`: exact limits ±1, absolute error near 1e-7.
#[device(crate = crate::lang)]
pub(crate) fn tanh_fast(v: f32) -> f32 {
    1.0 - div_full(2.0, exp_fast(v * 2.0) + 1.0)
}

/// SwiGLU of one pair: `silu(gate) · up`.
#[device(crate = crate::lang)]
pub(crate) fn swiglu_value(gate: f32, up: f32) -> f32 {
    (gate * sigmoid(gate)) * up
}
