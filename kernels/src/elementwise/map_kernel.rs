//! The elementwise kernels in `#[kernel]`: one source per shape (one input, two inputs, a
//! scaled input, SwiGLU's backward), generic over the element type and, for the first two,
//! over the op, a type whose `#[device] impl` is the f32 body one element runs. Each kernel is
//! a grid-stride loop over 16-byte vectors (`T::VEC` elements) and a scalar loop for the last
//! `n mod T::VEC`; buffers passed whole are allocation-aligned, so the vector loop applies.

use kernel_macros::{device, kernel};

/// A one-input op on f32. (Its methods run inside kernels only, hence the `allow`.)
#[allow(dead_code)]
pub trait Unary {
    fn apply(x: f32) -> f32;
}

/// A two-input op on f32.
#[allow(dead_code)]
pub trait Binary {
    fn apply(a: f32, b: f32) -> f32;
}

/// `x·σ(x)`.
pub struct Silu;
/// `0.5·x·(1 + tanh(k0·(x + k1·x³)))`.
pub struct GeluTanh;
/// `a + b`.
pub struct Add;
/// `a · b`.
pub struct Mul;
/// `silu(gate) · up`.
pub struct Swiglu;
/// `dy · silu'(x)`.
pub struct SiluBackward;
/// `dy · gelu'(x)`.
pub struct GeluTanhBackward;

/// `d silu / dx = σ·(1 + x·(1 − σ))` given `s = σ(x)`.
#[device(crate = crate::lang)]
fn silu_grad(x: f32, s: f32) -> f32 {
    s * x.mul_add(1.0 - s, 1.0)
}

/// `[x², tanh(k0·(x + k1·x³))]`. x² is capped so the gradient's `(1 − t²)·(1 + 3·k1·x²)` is
/// `0·finite`, not `0·∞`, for |x| near f32's limit.
#[device(crate = crate::lang)]
fn gelu_inner(x: f32) -> [f32; 2] {
    let x2 = (x * x).min(1e30);
    let poly = 0.044_715f32.mul_add(x2, 1.0);
    [x2, tanh_fast(0.797_884_6 * (x * poly))]
}

#[device(crate = crate::lang)]
impl Unary for Silu {
    fn apply(x: f32) -> f32 {
        x * sigmoid(x)
    }
}

#[device(crate = crate::lang)]
impl Unary for GeluTanh {
    fn apply(x: f32) -> f32 {
        let g = gelu_inner(x);
        (0.5 * x) * (1.0 + g[1])
    }
}

#[device(crate = crate::lang)]
impl Binary for Add {
    fn apply(a: f32, b: f32) -> f32 {
        a + b
    }
}

#[device(crate = crate::lang)]
impl Binary for Mul {
    fn apply(a: f32, b: f32) -> f32 {
        a * b
    }
}

#[device(crate = crate::lang)]
impl Binary for Swiglu {
    fn apply(a: f32, b: f32) -> f32 {
        swiglu_value(a, b)
    }
}

#[device(crate = crate::lang)]
impl Binary for SiluBackward {
    fn apply(a: f32, b: f32) -> f32 {
        b * silu_grad(a, sigmoid(a))
    }
}

#[device(crate = crate::lang)]
impl Binary for GeluTanhBackward {
    fn apply(a: f32, b: f32) -> f32 {
        let g = gelu_inner(a);
        let t = g[1];
        let left = 0.5 * (1.0 + t);
        let sech2 = (-t).mul_add(t, 1.0);
        let du = 0.797_884_6 * 0.134_145f32.mul_add(g[0], 1.0);
        ((0.5 * a) * sech2).mul_add(du, left) * b
    }
}

/// `out = O(x)`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], O in [Silu, GeluTanh]))]
pub fn map_unary<T: Element, O: Unary>(x: &[T], out: &mut [T], n: u32) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let stride = block_dim().x * grid_dim().x;
    let first = block_idx().x * block_dim().x + thread_idx().x;
    let steps = n / T::VEC;
    let mut s = first;
    while s < steps {
        let mut v = x.load_vec::<{ T::VEC }>(s * T::VEC);
        for k in 0..T::VEC {
            v[k] = O::apply(v[k] as f32) as T;
        }
        out.store_vec::<{ T::VEC }>(s * T::VEC, v);
        s += stride;
    }
    let mut i = steps * T::VEC + first;
    while i < n {
        out[i] = O::apply(x[i] as f32) as T;
        i += stride;
    }
}

/// `out = O(a, b)`.
#[kernel(crate = crate::lang,
         instances(T in [f32, bf16], O in [Add, Mul, Swiglu, SiluBackward, GeluTanhBackward]))]
pub fn map_binary<T: Element, O: Binary>(a: &[T], b: &[T], out: &mut [T], n: u32) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let stride = block_dim().x * grid_dim().x;
    let first = block_idx().x * block_dim().x + thread_idx().x;
    let steps = n / T::VEC;
    let mut s = first;
    while s < steps {
        let mut v = a.load_vec::<{ T::VEC }>(s * T::VEC);
        let w = b.load_vec::<{ T::VEC }>(s * T::VEC);
        for k in 0..T::VEC {
            v[k] = O::apply(v[k] as f32, w[k] as f32) as T;
        }
        out.store_vec::<{ T::VEC }>(s * T::VEC, v);
        s += stride;
    }
    let mut i = steps * T::VEC + first;
    while i < n {
        out[i] = O::apply(a[i] as f32, b[i] as f32) as T;
        i += stride;
    }
}

/// `out = s · x`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]))]
pub fn scale<T: Element>(x: &[T], out: &mut [T], s: f32, n: u32) {
    let stride = block_dim().x * grid_dim().x;
    let first = block_idx().x * block_dim().x + thread_idx().x;
    let steps = n / T::VEC;
    let mut j = first;
    while j < steps {
        let mut v = x.load_vec::<{ T::VEC }>(j * T::VEC);
        for k in 0..T::VEC {
            v[k] = ((v[k] as f32) * s) as T;
        }
        out.store_vec::<{ T::VEC }>(j * T::VEC, v);
        j += stride;
    }
    let mut i = steps * T::VEC + first;
    while i < n {
        out[i] = ((x[i] as f32) * s) as T;
        i += stride;
    }
}

/// Both SwiGLU gradients in one pass: `dgate = dout·up·silu'(gate)`, `dup = dout·silu(gate)`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]))]
pub fn swiglu_backward<T: Element>(
    gate: &[T],
    up: &[T],
    dout: &[T],
    dgate: &mut [T],
    dup: &mut [T],
    n: u32,
) {
    let stride = block_dim().x * grid_dim().x;
    let first = block_idx().x * block_dim().x + thread_idx().x;
    let steps = n / T::VEC;
    let mut j = first;
    while j < steps {
        let mut g = gate.load_vec::<{ T::VEC }>(j * T::VEC);
        let mut u = up.load_vec::<{ T::VEC }>(j * T::VEC);
        let d = dout.load_vec::<{ T::VEC }>(j * T::VEC);
        for k in 0..T::VEC {
            let x = g[k] as f32;
            let sg = sigmoid(x);
            let dy = d[k] as f32;
            g[k] = ((dy * (u[k] as f32)) * silu_grad(x, sg)) as T;
            u[k] = (dy * (x * sg)) as T;
        }
        dgate.store_vec::<{ T::VEC }>(j * T::VEC, g);
        dup.store_vec::<{ T::VEC }>(j * T::VEC, u);
        j += stride;
    }
    let mut i = steps * T::VEC + first;
    while i < n {
        let x = gate[i] as f32;
        let sg = sigmoid(x);
        let dy = dout[i] as f32;
        dgate[i] = ((dy * (up[i] as f32)) * silu_grad(x, sg)) as T;
        dup[i] = (dy * (x * sg)) as T;
        i += stride;
    }
}
