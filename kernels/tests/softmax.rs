//! Softmax on the emulator against the f64 reference, at odd and vector-friendly widths.

mod common_rowwise;

use common_rowwise::{assert_close, bits, download, poisoned, stream, tol, upload, Rng};
use kernel_runtime::Bf16;
use kernels::softmax::{reference, softmax, softmax_backward, Mask};
use kernels::Error;
use kernels::Float;

/// Warp rows, CTA rows held in registers (up to 16384 elements, the widest held exactly), and
/// wider rows that stream, in vectors and one element at a time.
const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (3, 7),
    (3, 33),
    (1, 4097),
    (3, 64),
    (2, 1024),
    (2, 8192),
    (4, 8196),
    (1, 16384),
    (1, 16392),
    (1, 16387),
];

fn forward_matches_reference<T: Float>(mask_queries: Option<usize>, scale: f32) {
    let s = stream();
    let mut rng = Rng::new(11);
    for &(rows, cols) in SHAPES {
        let mask = match mask_queries {
            Some(q) if q <= cols && rows % q == 0 => Mask::Causal { queries: q },
            Some(_) => continue,
            None => Mask::None,
        };
        let (x, xs) = upload::<T>(&s, &rng.vec(rows * cols, -4.0, 4.0));
        let mut y = poisoned::<T>(&s, rows * cols);
        softmax(&s, &x, &mut y, rows, cols, scale, mask).unwrap();
        let want = reference::softmax(&xs, rows, cols, scale, mask);
        let what = format!("softmax {rows}×{cols} {mask:?}");
        assert_close(&what, &download(&s, &y), &want, 1e-7, tol::<T>(2e-5));
    }
}

#[test]
fn f32_softmax_matches_reference_at_odd_widths() {
    forward_matches_reference::<f32>(None, 1.0);
}

#[test]
fn bf16_softmax_matches_reference_at_odd_widths() {
    forward_matches_reference::<Bf16>(None, 1.0);
}

#[test]
fn scaled_causal_softmax_zeroes_future_keys() {
    forward_matches_reference::<f32>(Some(1), 0.125);
    forward_matches_reference::<f32>(Some(3), 0.7);
    forward_matches_reference::<Bf16>(Some(3), 0.7);
}

fn backward_matches_reference<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(12);
    for &(rows, cols) in SHAPES {
        let scale = 0.5;
        let (x, xs) = upload::<T>(&s, &rng.vec(rows * cols, -3.0, 3.0));
        let y_ref = reference::softmax(&xs, rows, cols, 1.0, Mask::None);
        let (y, ys) = upload::<T>(&s, &y_ref.iter().map(|&v| v as f32).collect::<Vec<_>>());
        let (dy, dys) = upload::<T>(&s, &rng.vec(rows * cols, -1.0, 1.0));
        let mut dx = poisoned::<T>(&s, rows * cols);
        drop(x);
        softmax_backward(&s, &y, &dy, &mut dx, rows, cols, scale).unwrap();
        let want = reference::softmax_backward(&ys, &dys, rows, cols, scale);
        let what = format!("softmax_backward {rows}×{cols}");
        assert_close(&what, &download(&s, &dx), &want, 1e-6, tol::<T>(1e-4));
    }
}

#[test]
fn f32_softmax_backward_matches_reference() {
    backward_matches_reference::<f32>();
}

#[test]
fn bf16_softmax_backward_matches_reference() {
    backward_matches_reference::<Bf16>();
}

#[test]
fn reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(13);
    let (rows, cols, scale) = (2, 7, 0.8f32);
    let x = rng.vec(rows * cols, -2.0, 2.0);
    let w = rng.vec(rows * cols, -1.0, 1.0);
    // L = Σ w ⊙ softmax(scale·x); dL/dy = w.
    let loss = |x: &[f64]| -> f64 {
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let y = reference::softmax(&xf, rows, cols, scale, Mask::None);
        y.iter().zip(&w).map(|(a, &b)| a * b as f64).sum()
    };
    let y: Vec<f32> = reference::softmax(&x, rows, cols, scale, Mask::None)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let dx = reference::softmax_backward(&y, &w, rows, cols, scale);
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for i in 0..x.len() {
        let h = 1e-2;
        let (mut up, mut down) = (x64.clone(), x64.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!(
            (fd - dx[i]).abs() < 1e-4,
            "element {i}: fd {fd}, analytic {}",
            dx[i]
        );
    }
}

#[test]
fn softmax_runs_are_bit_identical() {
    let s = stream();
    let mut rng = Rng::new(14);
    let (rows, cols) = (3, 1031);
    let (x, _) = upload::<Bf16>(&s, &rng.vec(rows * cols, -8.0, 8.0));
    let run = || {
        let mut y = poisoned::<Bf16>(&s, rows * cols);
        softmax(&s, &x, &mut y, rows, cols, 1.0, Mask::None).unwrap();
        bits(&s, &y)
    };
    assert_eq!(run(), run());
}

#[test]
fn wrong_lengths_and_masks_are_errors_before_launch() {
    let s = stream();
    let (x, _) = upload::<f32>(&s, &[1.0; 12]);
    let mut y = poisoned::<f32>(&s, 11);
    let err = softmax(&s, &x, &mut y, 3, 4, 1.0, Mask::None).unwrap_err();
    assert!(matches!(
        err,
        Error::Length {
            buffer: "y",
            expected: 12,
            actual: 11,
            ..
        }
    ));
    assert!(
        download(&s, &y).iter().all(|v| v.is_nan()),
        "nothing is written on error"
    );
    let mut y = poisoned::<f32>(&s, 12);
    let err = softmax(&s, &x, &mut y, 3, 4, 1.0, Mask::Causal { queries: 2 }).unwrap_err();
    assert!(err.to_string().contains("multiple of queries"), "{err}");
    let err = softmax(&s, &x, &mut y, 3, 4, 1.0, Mask::Causal { queries: 0 }).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }));
}
