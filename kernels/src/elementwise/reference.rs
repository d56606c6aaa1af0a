//! CPU references of the elementwise ops, in f64.

/// √(2/π).
const K0: f64 = 0.797_884_560_802_865_4;
const K1: f64 = 0.044_715;

/// The logistic function.
///
/// ```
/// assert_eq!(kernels::elementwise::reference::sigmoid(0.0), 0.5);
/// ```
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `x·σ(x)`.
///
/// ```
/// assert_eq!(kernels::elementwise::reference::silu(0.0), 0.0);
/// ```
pub fn silu(x: f64) -> f64 {
    x * sigmoid(x)
}

/// `d silu / dx`.
///
/// ```
/// assert_eq!(kernels::elementwise::reference::silu_grad(0.0), 0.5);
/// ```
pub fn silu_grad(x: f64) -> f64 {
    let s = sigmoid(x);
    s * (1.0 + x * (1.0 - s))
}

/// GELU, tanh form: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
///
/// ```
/// assert!((kernels::elementwise::reference::gelu_tanh(1.0) - 0.841192).abs() < 1e-6);
/// ```
pub fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + (K0 * (x + K1 * x * x * x)).tanh())
}

/// `d gelu_tanh / dx`.
///
/// ```
/// assert_eq!(kernels::elementwise::reference::gelu_tanh_grad(0.0), 0.5);
/// ```
pub fn gelu_tanh_grad(x: f64) -> f64 {
    let t = (K0 * (x + K1 * x * x * x)).tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K0 * (1.0 + 3.0 * K1 * x * x)
}

/// SwiGLU: `silu(gate)·up`.
///
/// ```
/// assert_eq!(kernels::elementwise::reference::swiglu(0.0, 3.0), 0.0);
/// ```
pub fn swiglu(gate: f64, up: f64) -> f64 {
    silu(gate) * up
}

/// SwiGLU backward: `(dgate, dup)` for upstream `dout`.
///
/// ```
/// let (dg, du) = kernels::elementwise::reference::swiglu_backward(0.0, 2.0, 1.0);
/// assert_eq!((dg, du), (1.0, 0.0));
/// ```
pub fn swiglu_backward(gate: f64, up: f64, dout: f64) -> (f64, f64) {
    (dout * up * silu_grad(gate), dout * silu(gate))
}
