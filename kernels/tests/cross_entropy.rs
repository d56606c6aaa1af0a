//! Fused cross-entropy on the emulator against the f64 reference, with ignored rows.

mod common_rowwise;

use common_rowwise::{assert_close, bits, download, poisoned, stream, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::cross_entropy::{
    cross_entropy, cross_entropy_with, cross_entropy_workspace, reference, RowPass,
};
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

fn workspace(s: &kernel_runtime::Stream, rows: usize, cols: usize) -> Buffer<u32> {
    Buffer::zeros(s, cross_entropy_workspace(rows, cols)).unwrap()
}

fn matches_reference<T: Float>(pass: RowPass, shapes: &[(usize, usize)]) {
    let s = stream();
    let mut rng = Rng::new(31);
    for &(rows, cols) in shapes {
        let (logits, held) = upload::<T>(&s, &rng.vec(rows * cols, -6.0, 6.0));
        let t = targets(&mut rng, rows, cols);
        let tb = Buffer::from_host(&s, &t).unwrap();
        let mut dlogits = poisoned::<T>(&s, rows * cols);
        let mut row_loss = poisoned::<f32>(&s, rows);
        let mut loss = poisoned::<f32>(&s, 2);
        cross_entropy_with(
            &s,
            &logits,
            &tb,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            &mut workspace(&s, rows, cols),
            rows,
            cols,
            IGNORE,
            pass,
        )
        .unwrap();
        let want = reference(&held, &t, rows, cols, IGNORE);
        let what = format!("cross_entropy {pass:?} {rows}×{cols}");
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

/// Every path of the streamed pass: a warp or a block per row, 16-byte or single-element
/// access, rows past what a block holds; and more rows than the count and the mean read in one
/// step (16 × 256), with a partial step after.
const STREAMED: [(usize, usize); 9] = [
    (4400, 3),
    (1, 1),
    (3, 7),
    (3, 33),
    (1, 4097),
    (3, 64),
    (4, 2048),
    (2, 20000),
    (1, 9001),
];

/// One slice a row, two (the second shorter), and three; `Auto` splits only the last two, so
/// the split pass is asked for by name.
const SPLIT: [(usize, usize); 4] = [(3, 4), (3, 64), (4, 8200), (2, 20000)];

#[test]
fn f32_cross_entropy_matches_reference_with_ignored_rows() {
    matches_reference::<f32>(RowPass::Streamed, &STREAMED);
    matches_reference::<f32>(RowPass::Auto, &[(3, 33), (2, 20000)]);
}

#[test]
fn bf16_cross_entropy_picks_either_pass_and_matches_reference() {
    // Streamed, then split (8192 wide).
    matches_reference::<Bf16>(RowPass::Auto, &[(3, 4000), (2, 8192)]);
}

#[test]
fn bf16_cross_entropy_matches_reference_with_ignored_rows() {
    matches_reference::<Bf16>(RowPass::Auto, &STREAMED);
}

#[test]
fn f32_split_cross_entropy_matches_reference_with_ignored_rows() {
    matches_reference::<f32>(RowPass::Split, &SPLIT);
}

#[test]
fn a_row_over_32_blocks_runs_on_the_emulator() {
    // The widest split: 32 blocks a row, each waiting for all the others.
    matches_reference::<f32>(RowPass::Split, &[(1, 32 * 8192)]);
}

#[test]
fn bf16_split_cross_entropy_matches_reference_with_ignored_rows() {
    // bf16 takes 8 elements a chunk: one slice, two (8200 is 1025 chunks) and three.
    matches_reference::<Bf16>(RowPass::Split, &[(3, 8), (4, 8200), (2, 20000)]);
}

#[test]
fn the_split_pass_refuses_rows_it_cannot_hold_and_writes_nothing() {
    let s = stream();
    let tb = Buffer::from_host(&s, &[0i32]).unwrap();
    let mut row_loss = poisoned::<f32>(&s, 1);
    let mut loss = poisoned::<f32>(&s, 2);
    let refused = |err: Error| {
        assert!(
            matches!(&err, Error::Unsupported { .. }) && err.to_string().contains("Streamed"),
            "{err}"
        );
    };
    // bf16 rows not of 8-element chunks, f32 rows not of 4, and a row wider than 32 blocks
    // hold.
    let (logits, _) = upload::<Bf16>(&s, &[1.0; 68]);
    let mut dlogits = poisoned::<Bf16>(&s, 68);
    refused(
        cross_entropy_with(
            &s,
            &logits,
            &tb,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            &mut workspace(&s, 1, 68),
            1,
            68,
            IGNORE,
            RowPass::Split,
        )
        .unwrap_err(),
    );
    assert!(download(&s, &dlogits).iter().all(|v| v.is_nan()));
    for cols in [63, 32 * 8192 + 4] {
        let (logits, _) = upload::<f32>(&s, &vec![1.0; cols]);
        let mut dlogits = poisoned::<f32>(&s, cols);
        refused(
            cross_entropy_with(
                &s,
                &logits,
                &tb,
                &mut dlogits,
                &mut row_loss,
                &mut loss,
                &mut workspace(&s, 1, 64),
                1,
                cols,
                IGNORE,
                RowPass::Split,
            )
            .unwrap_err(),
        );
        assert!(download(&s, &dlogits).iter().all(|v| v.is_nan()), "{cols}");
    }
    assert!(download(&s, &loss).iter().all(|v| v.is_nan()));
    assert!(download(&s, &row_loss).iter().all(|v| v.is_nan()));
}

#[test]
fn a_short_workspace_is_an_error() {
    let s = stream();
    let (rows, cols) = (2, 8200);
    let (logits, _) = upload::<f32>(&s, &vec![1.0; rows * cols]);
    let tb = Buffer::from_host(&s, &[0i32, 1]).unwrap();
    let mut dlogits = poisoned::<f32>(&s, rows * cols);
    let mut row_loss = poisoned::<f32>(&s, rows);
    let mut loss = poisoned::<f32>(&s, 2);
    let need = cross_entropy_workspace(rows, cols);
    let mut short = Buffer::<u32>::zeros(&s, need - 1).unwrap();
    let err = cross_entropy(
        &s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        &mut short,
        rows,
        cols,
        IGNORE,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Length { buffer: "workspace", expected, .. } if expected == need),
        "{err}"
    );
    assert!(download(&s, &dlogits).iter().all(|v| v.is_nan()));
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
        &mut workspace(&s, 2, 4),
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

fn runs_are_bit_identical<T: Float>(pass: RowPass, rows: usize, cols: usize) {
    let s = stream();
    let mut rng = Rng::new(34);
    let (logits, _) = upload::<T>(&s, &rng.vec(rows * cols, -6.0, 6.0));
    let tb = Buffer::from_host(&s, &targets(&mut rng, rows, cols)).unwrap();
    // One workspace for both runs: the first leaves it as it found it.
    let mut ws = workspace(&s, rows, cols);
    let mut run = || {
        let mut dlogits = poisoned::<T>(&s, rows * cols);
        let mut row_loss = poisoned::<f32>(&s, rows);
        let mut loss = poisoned::<f32>(&s, 2);
        cross_entropy_with(
            &s,
            &logits,
            &tb,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            &mut ws,
            rows,
            cols,
            IGNORE,
            pass,
        )
        .unwrap();
        (bits(&s, &dlogits), bits(&s, &loss), bits(&s, &row_loss))
    };
    let first = run();
    assert_eq!(first, run());
    // The ticket counter and the rows' counters; the partials after them may stay.
    let left = ws.to_host(&s).unwrap();
    assert!(
        left[..rows + 1].iter().all(|&w| w == 0),
        "counters left as {:?}",
        &left[..rows + 1]
    );
}

#[test]
fn cross_entropy_runs_are_bit_identical() {
    runs_are_bit_identical::<Bf16>(RowPass::Auto, 5, 3000);
}

#[test]
fn split_cross_entropy_runs_are_bit_identical_and_leave_the_counters_at_zero() {
    runs_are_bit_identical::<f32>(RowPass::Split, 3, 12000);
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
        &mut workspace(&s, 2, 2),
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
