//! Elementwise kernels on the emulator against the f64 references.

mod common_tensor;

use common_tensor::*;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::elementwise::{self as ew, reference};
use kernels::Float;

const LENGTHS: [usize; 6] = [1, 7, 8, 33, 4097, 10_001];

type Ref1 = fn(f64) -> f64;

/// Runs a one-input op at every length and compares with `want`.
fn unary<T: Float>(name: &str, op: impl Fn(&Stream, &Buffer<T>, &mut Buffer<T>), want: Ref1) {
    let stream = emulator();
    for n in LENGTHS {
        let (x, xh) = upload::<T>(&stream, &Rng::new(n as u64).vec(n, -6.0, 6.0));
        let mut out = poisoned::<T>(&stream, n);
        op(&stream, &x, &mut out);
        let w: Vec<f64> = xh.iter().map(|&v| want(v)).collect();
        assert_close(
            &format!("{name} n={n}"),
            &download(&stream, &out),
            &w,
            tol_for::<T>(),
        );
    }
}

/// Runs a two-input op at every length and compares with `want`.
fn binary<T: Float>(
    name: &str,
    op: impl Fn(&Stream, &Buffer<T>, &Buffer<T>, &mut Buffer<T>),
    want: fn(f64, f64) -> f64,
) {
    let stream = emulator();
    for n in LENGTHS {
        let mut rng = Rng::new(n as u64 + 1);
        let (a, ah) = upload::<T>(&stream, &rng.vec(n, -6.0, 6.0));
        let (b, bh) = upload::<T>(&stream, &rng.vec(n, -3.0, 3.0));
        let mut out = poisoned::<T>(&stream, n);
        op(&stream, &a, &b, &mut out);
        let w: Vec<f64> = ah.iter().zip(&bh).map(|(&x, &y)| want(x, y)).collect();
        assert_close(
            &format!("{name} n={n}"),
            &download(&stream, &out),
            &w,
            tol_for::<T>(),
        );
    }
}

fn all_ops<T: Float>() {
    binary::<T>(
        "add",
        |s, a, b, o| ew::add(s, a, b, o).unwrap(),
        |a, b| a + b,
    );
    binary::<T>(
        "mul",
        |s, a, b, o| ew::mul(s, a, b, o).unwrap(),
        |a, b| a * b,
    );
    unary::<T>(
        "scale",
        |s, x, o| ew::scale(s, x, -0.75, o).unwrap(),
        |x| -0.75 * x,
    );
    unary::<T>(
        "silu",
        |s, x, o| ew::silu(s, x, o).unwrap(),
        reference::silu,
    );
    unary::<T>(
        "gelu_tanh",
        |s, x, o| ew::gelu_tanh(s, x, o).unwrap(),
        reference::gelu_tanh,
    );
    binary::<T>(
        "silu_backward",
        |s, x, dy, o| ew::silu_backward(s, x, dy, o).unwrap(),
        |x, dy| dy * reference::silu_grad(x),
    );
    binary::<T>(
        "gelu_tanh_backward",
        |s, x, dy, o| ew::gelu_tanh_backward(s, x, dy, o).unwrap(),
        |x, dy| dy * reference::gelu_tanh_grad(x),
    );
    binary::<T>(
        "swiglu",
        |s, g, u, o| ew::swiglu(s, g, u, o).unwrap(),
        reference::swiglu,
    );
}

#[test]
fn elementwise_ops_match_reference_at_odd_lengths_f32() {
    all_ops::<f32>();
}

#[test]
fn elementwise_ops_match_reference_at_odd_lengths_bf16() {
    all_ops::<Bf16>();
}

fn swiglu_backward_case<T: Float>(n: usize) -> (Vec<u32>, Vec<u32>) {
    let stream = emulator();
    let mut rng = Rng::new(n as u64 + 9);
    let (g, gh) = upload::<T>(&stream, &rng.vec(n, -6.0, 6.0));
    let (u, uh) = upload::<T>(&stream, &rng.vec(n, -2.0, 2.0));
    let (d, dh) = upload::<T>(&stream, &rng.vec(n, -1.0, 1.0));
    let mut dg = poisoned::<T>(&stream, n);
    let mut du = poisoned::<T>(&stream, n);
    ew::swiglu_backward(&stream, &g, &u, &d, &mut dg, &mut du).unwrap();
    let want: Vec<(f64, f64)> = (0..n)
        .map(|i| reference::swiglu_backward(gh[i], uh[i], dh[i]))
        .collect();
    let wg: Vec<f64> = want.iter().map(|w| w.0).collect();
    let wu: Vec<f64> = want.iter().map(|w| w.1).collect();
    assert_close(
        &format!("dgate n={n}"),
        &download(&stream, &dg),
        &wg,
        tol_for::<T>(),
    );
    assert_close(
        &format!("dup n={n}"),
        &download(&stream, &du),
        &wu,
        tol_for::<T>(),
    );
    (bits(&stream, &dg), bits(&stream, &du))
}

#[test]
fn swiglu_backward_writes_both_gradients_in_one_pass() {
    for n in LENGTHS {
        swiglu_backward_case::<f32>(n);
        swiglu_backward_case::<Bf16>(n);
    }
}

#[test]
fn swiglu_backward_is_bit_identical_across_runs() {
    assert_eq!(
        swiglu_backward_case::<f32>(4097),
        swiglu_backward_case::<f32>(4097)
    );
}

#[test]
fn reference_gradients_match_finite_differences() {
    let h = 1e-6;
    let mut rng = Rng::new(77);
    for _ in 0..200 {
        let x = rng.uniform(-8.0, 8.0) as f64;
        let (u, d) = (rng.uniform(-2.0, 2.0) as f64, rng.uniform(-1.0, 1.0) as f64);
        let fd = |f: &dyn Fn(f64) -> f64| (f(x + h) - f(x - h)) / (2.0 * h);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-7 + 1e-6 * b.abs();
        assert!(
            close(reference::silu_grad(x), fd(&reference::silu)),
            "silu' at {x}"
        );
        assert!(
            close(reference::gelu_tanh_grad(x), fd(&reference::gelu_tanh)),
            "gelu' at {x}"
        );
        let (dg, du) = reference::swiglu_backward(x, u, d);
        assert!(
            close(dg, fd(&|g| d * reference::swiglu(g, u))),
            "dgate at {x}"
        );
        let fu = (reference::swiglu(x, u + h) - reference::swiglu(x, u - h)) / (2.0 * h);
        assert!(close(du, d * fu), "dup at {x}");
    }
}

#[test]
fn elementwise_rejects_mismatched_lengths_before_writing() {
    let stream = emulator();
    let a = Buffer::from_host(&stream, &[1.0f32; 5]).unwrap();
    let b = Buffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut out = poisoned::<f32>(&stream, 5);
    let err = ew::add(&stream, &a, &b, &mut out).unwrap_err();
    assert!(
        err.to_string().contains("`b` holds 4 elements but 5"),
        "{err}"
    );
    assert!(download(&stream, &out).iter().all(|v| v.is_nan()));
    let mut short = poisoned::<f32>(&stream, 4);
    let mut dup = poisoned::<f32>(&stream, 5);
    let err = ew::swiglu_backward(&stream, &a, &a, &a, &mut short, &mut dup).unwrap_err();
    assert!(err.to_string().contains("`dgate`"), "{err}");
    assert!(download(&stream, &dup).iter().all(|v| v.is_nan()));
}

#[test]
fn activations_saturate_cleanly_at_huge_inputs() {
    let stream = emulator();
    let x = [-3e38f32, -1e20, -100.0, 100.0, 1e20, 3e38];
    let xb = Buffer::from_host(&stream, &x).unwrap();
    let dy = Buffer::from_host(&stream, &[1.0f32; 6]).unwrap();
    let mut out = poisoned::<f32>(&stream, 6);
    ew::gelu_tanh(&stream, &xb, &mut out).unwrap();
    assert_eq!(
        out.to_host(&stream).unwrap(),
        [0.0, 0.0, 0.0, 100.0, 1e20, 3e38]
    );
    ew::gelu_tanh_backward(&stream, &xb, &dy, &mut out).unwrap();
    assert_eq!(
        out.to_host(&stream).unwrap(),
        [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    );
    ew::silu(&stream, &xb, &mut out).unwrap();
    let s = out.to_host(&stream).unwrap();
    assert!(s[..3].iter().all(|&v| v == 0.0), "{s:?}");
    assert_eq!(&s[3..], &[100.0, 1e20, 3e38]);
}
