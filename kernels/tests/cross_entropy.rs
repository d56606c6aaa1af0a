//! Fused cross-entropy on the emulator against the f64 reference, with ignored rows.

mod common_rowwise;

use common_rowwise::{assert_close, bits, download, poisoned, stream, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::cross_entropy::{cross_entropy, reference};
use kernels::Error;
use kernels::Float;

const IGNORE: i32 = -100;

fn targets(rng: &mut Rng, rows: usize, cols: usize) -> Vec<i32> {
    (0..rows)
        .map(|r| {
            if r % 3 == 1 {
                IGNORE
            } else {
                rng.below(cols as u32) as i32
            }
        })
        .collect()
}

fn matches_reference<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(31);
    for &(rows, cols) in &[
        (1, 1),
        (3, 7),
        (3, 33),
        (1, 4097),
        (3, 64),
        (4, 2048),
        (2, 20000),
        (1, 9001),
    ] {
        let (logits, held) = upload::<T>(&s, &rng.vec(rows * cols, -6.0, 6.0));
        let t = targets(&mut rng, rows, cols);
        let tb = Buffer::from_host(&s, &t).unwrap();
        let mut dlogits = poisoned::<T>(&s, rows * cols);
        let mut row_loss = poisoned::<f32>(&s, rows);
        let mut loss = poisoned::<f32>(&s, 2);
        cross_entropy(
            &s,
            &logits,
            &tb,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            rows,
            cols,
            IGNORE,
        )
        .unwrap();
        let want = reference(&held, &t, rows, cols, IGNORE);
        let what = format!("cross_entropy {rows}×{cols}");
        let got = download(&s, &loss);
        assert_eq!(got[1], want.count as f32, "{what}: count");
        assert_close(&what, &got[..1], &[want.loss], 1e-5, 1e-5);
        assert_close(&what, &download(&s, &row_loss), &want.row_loss, 1e-5, 1e-5);
        assert_close(
            &what,
            &download(&s, &dlogits),
            &want.dlogits,
            1e-7,
            tol::<T>(1e-4),
        );
    }
}

#[test]
fn f32_cross_entropy_matches_reference_with_ignored_rows() {
    matches_reference::<f32>();
}

#[test]
fn bf16_cross_entropy_matches_reference_with_ignored_rows() {
    matches_reference::<Bf16>();
}

#[test]
fn reference_gradient_matches_finite_differences() {
    let mut rng = Rng::new(32);
    let (rows, cols) = (3, 5);
    let x = rng.vec(rows * cols, -2.0, 2.0);
    let t = [2, IGNORE, 4];
    let loss = |x: &[f64]| {
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        reference(&xf, &t, rows, cols, IGNORE).loss
    };
    let analytic = reference(&x, &t, rows, cols, IGNORE).dlogits;
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for i in 0..x.len() {
        let h = 1e-2;
        let (mut up, mut down) = (x64.clone(), x64.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!(
            (fd - analytic[i]).abs() < 1e-4,
            "element {i}: fd {fd}, analytic {}",
            analytic[i]
        );
    }
}

#[test]
fn an_out_of_range_target_poisons_its_row_only() {
    let s = stream();
    let (logits, _) = upload::<f32>(&s, &Rng::new(33).vec(2 * 4, -1.0, 1.0));
    let tb = Buffer::from_host(&s, &[7i32, 1]).unwrap();
    let mut dlogits = poisoned::<f32>(&s, 8);
    let mut row_loss = poisoned::<f32>(&s, 2);
    let mut loss = poisoned::<f32>(&s, 2);
    cross_entropy(
        &s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        2,
        4,
        IGNORE,
    )
    .unwrap();
    let rl = download(&s, &row_loss);
    assert!(rl[0].is_nan() && rl[1].is_finite(), "{rl:?}");
    let g = download(&s, &dlogits);
    assert!(g[..4].iter().all(|v| v.is_nan()) && g[4..].iter().all(|v| v.is_finite()));
}

#[test]
fn cross_entropy_runs_are_bit_identical() {
    let s = stream();
    let mut rng = Rng::new(34);
    let (rows, cols) = (5, 3000);
    let (logits, _) = upload::<Bf16>(&s, &rng.vec(rows * cols, -6.0, 6.0));
    let tb = Buffer::from_host(&s, &targets(&mut rng, rows, cols)).unwrap();
    let run = || {
        let mut dlogits = poisoned::<Bf16>(&s, rows * cols);
        let mut row_loss = poisoned::<f32>(&s, rows);
        let mut loss = poisoned::<f32>(&s, 2);
        cross_entropy(
            &s,
            &logits,
            &tb,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            rows,
            cols,
            IGNORE,
        )
        .unwrap();
        (bits(&s, &dlogits), bits(&s, &loss))
    };
    assert_eq!(run(), run());
}

#[test]
fn a_loss_buffer_of_one_element_is_an_error() {
    let s = stream();
    let (logits, _) = upload::<f32>(&s, &[1.0; 4]);
    let tb = Buffer::from_host(&s, &[0i32, 1]).unwrap();
    let mut dlogits = poisoned::<f32>(&s, 4);
    let mut row_loss = poisoned::<f32>(&s, 2);
    let mut loss = poisoned::<f32>(&s, 1);
    let err = cross_entropy(
        &s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        2,
        2,
        IGNORE,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "loss",
                expected: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(download(&s, &dlogits).iter().all(|v| v.is_nan()));
}
