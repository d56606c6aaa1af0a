//! Arg-max on the emulator against the reference, with planted ties and NaN.

mod common_rowwise;

use common_rowwise::{stream, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::argmax::{argmax, argmax_workspace, reference};
use kernels::Error;
use kernels::Float;

fn workspace(s: &kernel_runtime::Stream, rows: usize, cols: usize) -> Buffer<u32> {
    Buffer::zeros(s, argmax_workspace(rows, cols)).unwrap()
}

fn matches_reference<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(21);
    for &(rows, cols) in &[(1, 1), (3, 7), (3, 33), (1, 4097), (3, 512), (2, 20000)] {
        let mut vals = rng.vec(rows * cols, -5.0, 5.0);
        for r in 0..rows {
            // A tie for the maximum: the kernel must report the earlier column.
            let (a, b) = (
                rng.below(cols as u32) as usize,
                rng.below(cols as u32) as usize,
            );
            vals[r * cols + a.min(b)] = 9.0;
            vals[r * cols + a.max(b)] = 9.0;
        }
        let (logits, held) = upload::<T>(&s, &vals);
        let mut index = Buffer::from_host(&s, &vec![u32::MAX - 1; rows]).unwrap();
        let mut ws = workspace(&s, rows, cols);
        argmax(&s, &logits, &mut index, &mut ws, rows, cols).unwrap();
        let want = reference(&held, rows, cols);
        assert_eq!(index.to_host(&s).unwrap(), want, "{rows}×{cols}");
    }
}

#[test]
fn f32_argmax_picks_lowest_index_of_the_maximum() {
    matches_reference::<f32>();
}

#[test]
fn bf16_argmax_picks_lowest_index_of_the_maximum() {
    matches_reference::<Bf16>();
}

#[test]
fn nan_counts_as_the_largest_value() {
    let s = stream();
    let (logits, _) = upload::<f32>(&s, &[1.0, f32::INFINITY, f32::NAN, 2.0]);
    let mut index = Buffer::<u32>::zeros(&s, 1).unwrap();
    argmax(&s, &logits, &mut index, &mut workspace(&s, 1, 4), 1, 4).unwrap();
    assert_eq!(index.to_host(&s).unwrap(), vec![1]);
}

#[test]
fn a_short_index_buffer_is_an_error() {
    let s = stream();
    let (logits, _) = upload::<f32>(&s, &[1.0; 6]);
    let mut index = Buffer::<u32>::zeros(&s, 1).unwrap();
    let err = argmax(&s, &logits, &mut index, &mut workspace(&s, 2, 3), 2, 3).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "index",
                expected: 2,
                actual: 1,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_row_of_negative_infinity_reports_column_zero() {
    let s = stream();
    let (logits, _) = upload::<Bf16>(&s, &vec![f32::NEG_INFINITY; 2 * 40]);
    let mut index = Buffer::from_host(&s, &[7u32, 7]).unwrap();
    argmax(&s, &logits, &mut index, &mut workspace(&s, 2, 40), 2, 40).unwrap();
    assert_eq!(index.to_host(&s).unwrap(), vec![0, 0]);
}

#[test]
fn rows_split_over_ctas_agree_with_the_reference_call_after_call() {
    // 2 × 20000 f32 splits each row over several CTAs; a tie between the first and the last
    // segment goes to the first, whichever CTA finishes last. The same workspace serves every
    // call: each leaves its counters at zero.
    let s = stream();
    let (rows, cols) = (2, 20000);
    let mut ws = workspace(&s, rows, cols);
    for (a, b) in [(3, 19999), (19990, 5), (10000, 10001)] {
        let mut vals = vec![-1.0f32; rows * cols];
        for r in 0..rows {
            vals[r * cols + a] = 4.0;
            vals[r * cols + b] = 4.0;
        }
        let (logits, held) = upload::<f32>(&s, &vals);
        let mut index = Buffer::<u32>::zeros(&s, rows).unwrap();
        argmax(&s, &logits, &mut index, &mut ws, rows, cols).unwrap();
        assert_eq!(index.to_host(&s).unwrap(), reference(&held, rows, cols));
        assert_eq!(index.to_host(&s).unwrap(), vec![a.min(b) as u32; rows]);
    }
    assert!(ws.to_host(&s).unwrap()[..rows].iter().all(|&c| c == 0));
}

#[test]
fn signed_zeros_tie_across_segments_and_the_lower_column_wins() {
    // −0 and +0 are equal maxima of a row split over several CTAs: the lower column wins,
    // whichever sign it carries.
    let s = stream();
    let (rows, cols) = (1, 20000);
    let mut ws = workspace(&s, rows, cols);
    for (a, b) in [(3, 19999), (19990, 5)] {
        let mut vals = vec![-1.0f32; cols];
        vals[a] = -0.0;
        vals[b] = 0.0;
        let (logits, _) = upload::<f32>(&s, &vals);
        let mut index = Buffer::<u32>::zeros(&s, rows).unwrap();
        argmax(&s, &logits, &mut index, &mut ws, rows, cols).unwrap();
        assert_eq!(index.to_host(&s).unwrap(), vec![a.min(b) as u32]);
    }
}

#[test]
fn a_short_workspace_is_an_error() {
    let s = stream();
    let (logits, _) = upload::<f32>(&s, &[1.0; 6]);
    let mut index = Buffer::<u32>::zeros(&s, 2).unwrap();
    let mut ws = Buffer::<u32>::zeros(&s, argmax_workspace(2, 3) - 1).unwrap();
    let err = argmax(&s, &logits, &mut index, &mut ws, 2, 3).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "workspace",
                ..
            }
        ),
        "{err}"
    );
}
