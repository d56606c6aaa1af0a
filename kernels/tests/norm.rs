//! Norm kernels on the emulator against the f64 references.

mod common_tensor;

use common_tensor::*;
use kernel_runtime::{Bf16, Buffer, F16};
use kernels::norm::{self, reference};
use kernels::Float;

fn rms_case<T: Float>(rows: usize, cols: usize, seed: u64) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    let (x, xh) = upload::<T>(&stream, &rng.vec(rows * cols, -2.0, 2.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let mut y = poisoned::<T>(&stream, rows * cols);
    norm::rms_norm(&stream, &x, &g, &mut y, rows, cols, 1e-5).unwrap();
    let want = reference::rms_norm(&xh, &gh, rows, cols, 1e-5);
    let what = format!("rms_norm {rows}x{cols} {:?}", T::TYPE);
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

#[test]
fn rms_norm_refuses_f16_before_writing() {
    let stream = emulator();
    let x = Buffer::from_host(&stream, &[F16::from_f32(1.5); 8]).unwrap();
    let g = Buffer::from_host(&stream, &[F16::from_f32(1.0); 4]).unwrap();
    let mut y = poisoned::<F16>(&stream, 8);
    let err = norm::rms_norm(&stream, &x, &g, &mut y, 2, 4, 1e-5).unwrap_err();
    assert!(
        matches!(err, kernels::Error::Unsupported { op: "rms_norm", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("f32 and bf16 only"), "{err}");
    assert!(download(&stream, &y).iter().all(|v| v.is_nan()));
}

fn add_rms_case<T: Float>(rows: usize, cols: usize, seed: u64) {
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
    let what = format!("add_rms_norm {rows}x{cols} {:?}", T::TYPE);
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

/// One element at a time, blocks stop at 768 threads, so a row over 768 × 16 elements reads
/// its last columns back.
#[test]
fn add_rms_norm_reads_back_wide_one_element_rows() {
    add_rms_case::<f32>(2, 13_001, 7);
    add_rms_case::<Bf16>(3, 12_289, 8);
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

/// `Σ w·f(x)` for finite differences.
fn weighted(y: &[f64], w: &[f64]) -> f64 {
    y.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// Central differences of `loss` at every element of `v` (in f64, step 1e-6).
fn numeric_grad(v: &[f64], loss: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let h = 1e-6;
    (0..v.len())
        .map(|i| {
            let mut p = v.to_vec();
            p[i] += h;
            let up = loss(&p);
            p[i] -= 2.0 * h;
            (up - loss(&p)) / (2.0 * h)
        })
        .collect()
}

const FD: Tol = Tol {
    atol: 1e-6,
    rtol: 1e-5,
};

#[test]
fn rms_norm_reference_backward_matches_finite_differences_at_odd_widths() {
    for (rows, cols) in [(1, 1), (1, 7), (3, 33), (2, 64)] {
        let mut rng = Rng::new(cols as u64);
        let to64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        let x = to64(rng.vec(rows * cols, -2.0, 2.0));
        let g = to64(rng.vec(cols, 0.5, 1.5));
        let w = to64(rng.vec(rows * cols, -1.0, 1.0));
        let eps = 1e-3;
        let (dx, dg) = reference::rms_norm_backward(&x, &g, &w, rows, cols, eps);
        let fx = numeric_grad(&x, |x| {
            weighted(&reference::rms_norm(x, &g, rows, cols, eps), &w)
        });
        let fg = numeric_grad(&g, |g| {
            weighted(&reference::rms_norm(&x, g, rows, cols, eps), &w)
        });
        assert_close("rms dx vs differences", &dx, &fx, FD);
        assert_close("rms dgamma vs differences", &dg, &fg, FD);
    }
}

#[test]
fn layer_norm_reference_backward_matches_finite_differences_at_odd_widths() {
    for (rows, cols) in [(1, 2), (1, 7), (3, 33), (2, 64)] {
        let mut rng = Rng::new(cols as u64 + 50);
        let to64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        let x = to64(rng.vec(rows * cols, -2.0, 2.0));
        let g = to64(rng.vec(cols, 0.5, 1.5));
        let be = to64(rng.vec(cols, -0.5, 0.5));
        let w = to64(rng.vec(rows * cols, -1.0, 1.0));
        let eps = 1e-3;
        let (dx, dg, db) = reference::layer_norm_backward(&x, &g, &w, rows, cols, eps);
        let f = |x: &[f64], g: &[f64], be: &[f64]| {
            weighted(&reference::layer_norm(x, g, be, rows, cols, eps), &w)
        };
        assert_close(
            "ln dx vs differences",
            &dx,
            &numeric_grad(&x, |v| f(v, &g, &be)),
            FD,
        );
        assert_close(
            "ln dgamma vs differences",
            &dg,
            &numeric_grad(&g, |v| f(&x, v, &be)),
            FD,
        );
        assert_close(
            "ln dbeta vs differences",
            &db,
            &numeric_grad(&be, |v| f(&x, &g, v)),
            FD,
        );
    }
}

/// Tolerance of a backward output: sums of many terms, so a little looser than forward.
fn grad_tol<T: Float>() -> Tol {
    match T::TYPE {
        kernels::FloatType::F32 => Tol {
            atol: 1e-4,
            rtol: 1e-4,
        },
        kernels::FloatType::Bf16 => Tol {
            atol: 3e-2,
            rtol: 1.5e-2,
        },
        kernels::FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    }
}

fn rms_backward_case<T: Float>(rows: usize, cols: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    let n = rows * cols;
    let (x, xh) = upload::<T>(&stream, &rng.vec(n, -2.0, 2.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let (dy, dyh) = upload::<T>(&stream, &rng.vec(n, -1.0, 1.0));
    let mut dx = poisoned::<T>(&stream, n);
    let mut dg = poisoned::<T>(&stream, cols);
    let ws_len = norm::rms_norm_backward_workspace(rows, cols);
    let mut ws = Buffer::from_host(&stream, &vec![f32::NAN; ws_len]).unwrap();
    norm::rms_norm_backward(
        &stream, &x, &g, &dy, &mut dx, &mut dg, &mut ws, rows, cols, 1e-5,
    )
    .unwrap();
    let (want_dx, want_dg) = reference::rms_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
    let what = format!("rms_norm_backward {rows}x{cols} {:?}", T::TYPE);
    assert_close(
        &format!("{what} dx"),
        &download(&stream, &dx),
        &want_dx,
        grad_tol::<T>(),
    );
    assert_close(
        &format!("{what} dgamma"),
        &download(&stream, &dg),
        &want_dg,
        grad_tol::<T>(),
    );
    (bits(&stream, &dx), bits(&stream, &dg))
}

#[test]
fn rms_norm_backward_matches_the_reference_backward_at_odd_widths() {
    for rows in ROWS {
        for cols in WIDTHS {
            rms_backward_case::<f32>(rows, cols, cols as u64 + 300);
            rms_backward_case::<Bf16>(rows, cols, cols as u64 + 400);
        }
    }
}

#[test]
fn rms_norm_backward_sums_gamma_gradients_over_more_rows_than_ctas() {
    // 1100 rows > 512 workspace rows: each CTA owns two or three rows, and the vector
    // specializations load a CTA's next row while they finish the current one.
    rms_backward_case::<f32>(1100, 8, 1);
    rms_backward_case::<Bf16>(1100, 12, 2);
    rms_backward_case::<Bf16>(1100, 16, 3);
}

#[test]
fn rms_norm_backward_is_bit_identical_across_runs() {
    assert_eq!(
        rms_backward_case::<f32>(37, 4097, 9),
        rms_backward_case::<f32>(37, 4097, 9)
    );
}

fn layer_backward_case<T: Float>(rows: usize, cols: usize, seed: u64) {
    layer_backward_case_around::<T>(rows, cols, seed, 0.0);
}

/// LayerNorm backward on inputs uniform in `center ± 2`.
fn layer_backward_case_around<T: Float>(rows: usize, cols: usize, seed: u64, center: f32) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    let n = rows * cols;
    let (x, xh) = upload::<T>(&stream, &rng.vec(n, center - 2.0, center + 2.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let (dy, dyh) = upload::<T>(&stream, &rng.vec(n, -1.0, 1.0));
    let mut dx = poisoned::<T>(&stream, n);
    let mut dg = poisoned::<T>(&stream, cols);
    let mut db = poisoned::<T>(&stream, cols);
    let ws_len = norm::layer_norm_backward_workspace(rows, cols);
    let mut ws = Buffer::from_host(&stream, &vec![f32::NAN; ws_len]).unwrap();
    norm::layer_norm_backward(
        &stream, &x, &g, &dy, &mut dx, &mut dg, &mut db, &mut ws, rows, cols, 1e-5,
    )
    .unwrap();
    let (wdx, wdg, wdb) = reference::layer_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
    let what = format!("layer_norm_backward {rows}x{cols} {:?}", T::TYPE);
    // dx of a row of one element is 0 up to rounding; compare with an absolute floor.
    assert_close(
        &format!("{what} dx"),
        &download(&stream, &dx),
        &wdx,
        grad_tol::<T>(),
    );
    assert_close(
        &format!("{what} dgamma"),
        &download(&stream, &dg),
        &wdg,
        grad_tol::<T>(),
    );
    assert_close(
        &format!("{what} dbeta"),
        &download(&stream, &db),
        &wdb,
        grad_tol::<T>(),
    );
}

#[test]
fn layer_norm_backward_matches_the_reference_backward_at_odd_widths() {
    for rows in ROWS {
        for cols in WIDTHS {
            layer_backward_case::<f32>(rows, cols, cols as u64 + 500);
            layer_backward_case::<Bf16>(rows, cols, cols as u64 + 600);
        }
    }
    layer_backward_case::<f32>(1100, 8, 3);
    layer_backward_case::<Bf16>(1100, 16, 4);
}

#[test]
fn layer_norm_backward_keeps_its_precision_far_from_zero_mean() {
    // The row statistics come from sums shifted by the row's first element; a mean of 100
    // against a spread of ±2 would cost an unshifted Σx² − n·mean² most of its digits.
    layer_backward_case_around::<f32>(5, 33, 7, 100.0);
    layer_backward_case_around::<f32>(3, 1024, 8, 100.0);
    layer_backward_case_around::<Bf16>(3, 1024, 9, 100.0);
}

fn layer_case<T: Float>(rows: usize, cols: usize, seed: u64) {
    let stream = emulator();
    let mut rng = Rng::new(seed);
    // An offset mean, so a one-pass variance would lose digits.
    let (x, xh) = upload::<T>(&stream, &rng.vec(rows * cols, 2.0, 6.0));
    let (g, gh) = upload::<T>(&stream, &rng.vec(cols, 0.5, 1.5));
    let (be, bh) = upload::<T>(&stream, &rng.vec(cols, -0.5, 0.5));
    let mut y = poisoned::<T>(&stream, rows * cols);
    norm::layer_norm(&stream, &x, &g, &be, &mut y, rows, cols, 1e-5).unwrap();
    let want = reference::layer_norm(&xh, &gh, &bh, rows, cols, 1e-5);
    let what = format!("layer_norm {rows}x{cols} {:?}", T::TYPE);
    assert_close(&what, &download(&stream, &y), &want, grad_tol::<T>());
}

#[test]
fn layer_norm_matches_reference_at_odd_and_aligned_widths() {
    for rows in ROWS {
        for cols in WIDTHS {
            layer_case::<f32>(rows, cols, cols as u64 + 700);
            layer_case::<Bf16>(rows, cols, cols as u64 + 800);
        }
    }
    layer_case::<f32>(13, 100, 4);
}

/// The RMSNorm and LayerNorm backward against the reference on the same inputs; returns the
/// outputs' bits.
fn backward_case<T: Float>(rows: usize, cols: usize, seed: u64) -> Vec<Vec<u32>> {
    let stream = emulator();
    let s = &stream;
    let mut rng = Rng::new(seed);
    let n = rows * cols;
    let (x, xh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
    let (g, gh) = upload::<T>(s, &rng.vec(cols, 0.5, 1.5));
    let (dy, dyh) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
    let what = format!("{rows}x{cols} {:?}", T::TYPE);
    let ws_len = norm::layer_norm_backward_workspace(rows, cols);
    let (mut dx, mut dg) = (poisoned::<T>(s, n), poisoned::<T>(s, cols));
    let mut ws = poisoned::<f32>(s, ws_len);
    norm::rms_norm_backward(s, &x, &g, &dy, &mut dx, &mut dg, &mut ws, rows, cols, 1e-5).unwrap();
    let rms = [download(s, &dx), download(s, &dg)];
    let mut out = vec![bits(s, &dx), bits(s, &dg)];
    let (wdx, wdg) = reference::rms_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
    for (name, k, want) in [("dx", 0, &wdx), ("dgamma", 1, &wdg)] {
        let label = format!("rms_norm_backward {what} {name}");
        assert_close(&label, &rms[k], want, grad_tol::<T>());
    }
    let (mut dx, mut dg, mut db) = (
        poisoned::<T>(s, n),
        poisoned::<T>(s, cols),
        poisoned::<T>(s, cols),
    );
    let mut ws = poisoned::<f32>(s, ws_len);
    norm::layer_norm_backward(
        s, &x, &g, &dy, &mut dx, &mut dg, &mut db, &mut ws, rows, cols, 1e-5,
    )
    .unwrap();
    let layer = [download(s, &dx), download(s, &dg), download(s, &db)];
    out.extend([bits(s, &dx), bits(s, &dg), bits(s, &db)]);
    let (wdx, wdg, wdb) = reference::layer_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
    for (name, k, want) in [("dx", 0, &wdx), ("dgamma", 1, &wdg), ("dbeta", 2, &wdb)] {
        let label = format!("layer_norm_backward {what} {name}");
        assert_close(&label, &layer[k], want, grad_tol::<T>());
    }
    out
}

/// One shape per kind of block the backward kernels run: one element at a time in one warp
/// (odd widths), 16-byte chunks over several warps, more rows than blocks (the bf16 16-byte
/// instances then load a block's next row early), and rows wider than the held registers, in
/// both accesses.
const BACKWARD_SHAPES: [(usize, usize); 7] = [
    (3, 7),
    (2, 33),
    (5, 1024),
    (3, 520),
    (600, 40),
    (2, 4097),
    (2, 16400),
];

#[test]
fn backward_kernels_match_the_reference_at_held_and_reread_widths() {
    for (i, (rows, cols)) in BACKWARD_SHAPES.into_iter().enumerate() {
        backward_case::<f32>(rows, cols, 900 + i as u64);
        backward_case::<Bf16>(rows, cols, 950 + i as u64);
    }
}

#[test]
fn backward_kernels_are_bit_identical_across_runs_with_prefetch() {
    assert_eq!(
        backward_case::<Bf16>(600, 40, 7),
        backward_case::<Bf16>(600, 40, 7)
    );
}

#[test]
fn backward_rejects_a_short_workspace() {
    let stream = emulator();
    let x = Buffer::from_host(&stream, &[1.0f32; 8]).unwrap();
    let g = Buffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut dx = poisoned::<f32>(&stream, 8);
    let mut dg = poisoned::<f32>(&stream, 4);
    let mut ws = poisoned::<f32>(&stream, 7);
    let err = norm::rms_norm_backward(&stream, &x, &g, &x, &mut dx, &mut dg, &mut ws, 2, 4, 1e-5)
        .unwrap_err();
    assert!(err.to_string().contains("at least 8"), "{err}");
    assert!(download(&stream, &dx).iter().all(|v| v.is_nan()));
}

#[test]
fn layer_norm_backward_and_fused_add_are_bit_identical_across_runs() {
    let run = || {
        let stream = emulator();
        let (rows, cols) = (45, 1000);
        let n = rows * cols;
        let mut rng = Rng::new(99);
        let (x, _) = upload::<Bf16>(&stream, &rng.vec(n, -2.0, 2.0));
        let (r, _) = upload::<Bf16>(&stream, &rng.vec(n, -2.0, 2.0));
        let (g, _) = upload::<Bf16>(&stream, &rng.vec(cols, 0.5, 1.5));
        let (dy, _) = upload::<Bf16>(&stream, &rng.vec(n, -1.0, 1.0));
        let (mut sum, mut y) = (poisoned::<Bf16>(&stream, n), poisoned::<Bf16>(&stream, n));
        norm::add_rms_norm(&stream, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5).unwrap();
        let (mut dx, mut dg, mut db) = (
            poisoned::<Bf16>(&stream, n),
            poisoned::<Bf16>(&stream, cols),
            poisoned::<Bf16>(&stream, cols),
        );
        let mut ws = poisoned::<f32>(&stream, norm::layer_norm_backward_workspace(rows, cols));
        norm::layer_norm_backward(
            &stream, &x, &g, &dy, &mut dx, &mut dg, &mut db, &mut ws, rows, cols, 1e-5,
        )
        .unwrap();
        [&sum, &y, &dx, &dg, &db].map(|b| bits(&stream, b))
    };
    assert_eq!(run(), run());
}
