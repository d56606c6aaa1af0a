//! Norm kernels on the emulator against the f64 references.

mod common_k1;

use common_k1::*;
use kernel_runtime::{Bf16, Buffer};
use kernels::cast::Element;
use kernels::norm::{self, reference};

fn rms_case<T: Element>(rows: usize, cols: usize, seed: u64) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    let (x, xh) = upload::<T>(&stream, &rng.vec(rows * cols, -2.0, 2.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let mut y = poisoned::<T>(&stream, rows * cols);
    norm::rms_norm(&stream, &x, &g, &mut y, rows, cols, 1e-5).unwrap();
    let want = reference::rms_norm(&xh, &gh, rows, cols, 1e-5);
    let what = format!("rms_norm {rows}x{cols} {:?}", T::STORAGE);
    assert_close(&what, &download(&stream, &y), &want, tol_for::<T>());
}

#[test]
fn rms_norm_matches_reference_at_odd_and_aligned_widths_f32() {
    for rows in ROWS {
        for cols in WIDTHS {
            rms_case::<f32>(rows, cols, (rows * 10_000 + cols) as u64);
        }
    }
}

#[test]
fn rms_norm_matches_reference_at_odd_and_aligned_widths_bf16() {
    for rows in ROWS {
        for cols in WIDTHS {
            rms_case::<Bf16>(rows, cols, (rows * 10_000 + cols) as u64 + 7);
        }
    }
}

#[test]
fn rms_norm_covers_many_rows_per_grid() {
    // More rows than one warp-per-row CTA holds, and rows not a multiple of its 4 warps.
    rms_case::<f32>(13, 64, 3);
    rms_case::<Bf16>(13, 40, 4);
}

#[test]
fn rms_norm_is_bit_identical_across_runs() {
    let stream = emulator();
    let mut rng = Rng::new(11);
    let (rows, cols) = (3, 4097);
    let (x, _) = upload::<f32>(&stream, &rng.vec(rows * cols, -3.0, 3.0));
    let (g, _) = upload::<f32>(&stream, &rng.vec(cols, 0.5, 1.5));
    let mut a = poisoned::<f32>(&stream, rows * cols);
    let mut b = poisoned::<f32>(&stream, rows * cols);
    norm::rms_norm(&stream, &x, &g, &mut a, rows, cols, 1e-6).unwrap();
    norm::rms_norm(&stream, &x, &g, &mut b, rows, cols, 1e-6).unwrap();
    assert_eq!(bits(&stream, &a), bits(&stream, &b));
}

#[test]
fn rms_norm_rejects_a_short_gamma_before_writing() {
    let stream = emulator();
    let x = Buffer::from_host(&stream, &[1.0f32; 8]).unwrap();
    let g = Buffer::from_host(&stream, &[1.0f32; 3]).unwrap();
    let mut y = poisoned::<f32>(&stream, 8);
    let err = norm::rms_norm(&stream, &x, &g, &mut y, 2, 4, 1e-5).unwrap_err();
    assert!(
        err.to_string().contains("`gamma` holds 3 elements but 4"),
        "{err}"
    );
    assert!(download(&stream, &y).iter().all(|v| v.is_nan()));
    let err = norm::rms_norm(&stream, &x, &g, &mut y, 2, 0, 1e-5).unwrap_err();
    assert!(err.to_string().contains("cols is 0"), "{err}");
}

fn add_rms_case<T: Element>(rows: usize, cols: usize, seed: u64) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    let (x, xh) = upload::<T>(&stream, &rng.vec(rows * cols, -2.0, 2.0));
    let (r, rh) = upload::<T>(&stream, &rng.vec(rows * cols, -2.0, 2.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let mut sum = poisoned::<T>(&stream, rows * cols);
    let mut y = poisoned::<T>(&stream, rows * cols);
    norm::add_rms_norm(&stream, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5).unwrap();
    // The norm reads the stored sum, rounded to T.
    let sum_want: Vec<f64> = xh
        .iter()
        .zip(&rh)
        .map(|(a, b)| T::from_f32((a + b) as f32).to_f32() as f64)
        .collect();
    let what = format!("add_rms_norm {rows}x{cols} {:?}", T::STORAGE);
    assert_close(&what, &download(&stream, &sum), &sum_want, tol_for::<T>());
    let want = reference::rms_norm(&sum_want, &gh, rows, cols, 1e-5);
    assert_close(&what, &download(&stream, &y), &want, tol_for::<T>());
}

#[test]
fn add_rms_norm_writes_the_sum_and_normalizes_it() {
    for rows in ROWS {
        for cols in WIDTHS {
            add_rms_case::<f32>(rows, cols, cols as u64 + 100);
            add_rms_case::<Bf16>(rows, cols, cols as u64 + 200);
        }
    }
}

#[test]
fn rms_norm_heads_normalizes_each_head_with_the_shared_gamma() {
    let stream = emulator();
    let (tokens, heads, dim) = (3, 5, 24);
    let mut rng = Rng::new(5);
    let (x, xh) = upload::<Bf16>(&stream, &rng.vec(tokens * heads * dim, -4.0, 4.0));
    let (g, gh) = upload::<Bf16>(&stream, &rng.vec(dim, 0.5, 1.5));
    let mut y = poisoned::<Bf16>(&stream, tokens * heads * dim);
    norm::rms_norm_heads(&stream, &x, &g, &mut y, tokens, heads, dim, 1e-6).unwrap();
    let want = reference::rms_norm(&xh, &gh, tokens * heads, dim, 1e-6);
    assert_close("qk-norm", &download(&stream, &y), &want, tol_for::<Bf16>());
    let short = poisoned::<Bf16>(&stream, dim - 1);
    let err = norm::rms_norm_heads(&stream, &x, &short, &mut y, tokens, heads, dim, 1e-6);
    assert!(err.unwrap_err().to_string().contains("head_dim = 24"));
}
