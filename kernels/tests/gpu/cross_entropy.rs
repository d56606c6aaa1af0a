//! Cross-entropy and arg-max on the GPU at real shapes.

use crate::common_rowwise::{assert_close, bits, download, gpu_stream, poisoned, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::argmax::argmax;
use kernels::cross_entropy::{cross_entropy_with, cross_entropy_workspace, RowPass};
use kernels::Float;

fn cross_entropy_at<T: Float>(s: &Stream, rows: usize, vocab: usize, pass: RowPass) {
    let mut rng = Rng::new(103);
    let (logits, held) = upload::<T>(s, &rng.vec(rows * vocab, -8.0, 8.0));
    let t: Vec<i32> = (0..rows)
        .map(|r| {
            if r % 5 == 2 {
                -100
            } else {
                rng.below(vocab as u32) as i32
            }
        })
        .collect();
    let tb = Buffer::from_host(s, &t).unwrap();
    let mut dlogits = poisoned::<T>(s, rows * vocab);
    let mut row_loss = poisoned::<f32>(s, rows);
    let mut loss = poisoned::<f32>(s, 2);
    let mut ws = Buffer::<u32>::zeros(s, cross_entropy_workspace(rows, vocab)).unwrap();
    cross_entropy_with(
        s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        &mut ws,
        rows,
        vocab,
        -100,
        pass,
    )
    .unwrap();
    let want = kernels::cross_entropy::reference(&held, &t, rows, vocab, -100);
    let got = download(s, &loss);
    assert_eq!(got[1], want.count as f32);
    assert_close("loss", &got[..1], &[want.loss], 1e-4, 1e-5);
    assert_close(
        "row_loss",
        &download(s, &row_loss),
        &want.row_loss,
        1e-4,
        1e-5,
    );
    assert_close(
        "dlogits",
        &download(s, &dlogits),
        &want.dlogits,
        1e-9,
        tol::<T>(1e-4),
    );
    let first = bits(s, &dlogits);
    cross_entropy_with(
        s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        &mut ws,
        rows,
        vocab,
        -100,
        pass,
    )
    .unwrap();
    assert_eq!(
        bits(s, &dlogits),
        first,
        "{pass:?}: two runs are bit-identical"
    );
    // The ticket counter and the rows' counters (the partials after them may stay).
    let counters = ws.to_host(s).unwrap();
    let counters = &counters[..counters.len().min(rows + 1)];
    assert!(
        counters.iter().all(|&w| w == 0),
        "{pass:?}: the workspace's counters are left at zero"
    );

    let mut index = Buffer::from_host(s, &vec![u32::MAX; rows]).unwrap();
    let mut ws = Buffer::<u32>::zeros(s, kernels::argmax::argmax_workspace(rows, vocab)).unwrap();
    argmax(s, &logits, &mut index, &mut ws, rows, vocab).unwrap();
    let want = kernels::argmax::reference(&held, rows, vocab);
    assert_eq!(index.to_host(s).unwrap(), want, "argmax");
    // A second call on the same workspace (its counters are back at zero).
    let mut again = Buffer::from_host(s, &vec![u32::MAX; rows]).unwrap();
    argmax(s, &logits, &mut again, &mut ws, rows, vocab).unwrap();
    assert_eq!(again.to_host(s).unwrap(), want, "argmax, second call");
}

#[test]
fn cross_entropy_and_argmax_match_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    cross_entropy_at::<Bf16>(&s, 32, 151936, RowPass::Auto);
    // Split (Auto picks it for this width), then streamed.
    cross_entropy_at::<f32>(&s, 16, 151936, RowPass::Auto);
    cross_entropy_at::<f32>(&s, 16, 151936, RowPass::Streamed);
    cross_entropy_at::<f32>(&s, 16, 50257, RowPass::Auto);
    cross_entropy_at::<Bf16>(&s, 8, 50257, RowPass::Auto);
    // 32 slices a row, the most the split pass takes, and two rows of many (ragged last slice).
    cross_entropy_at::<f32>(&s, 3, 262144, RowPass::Split);
    cross_entropy_at::<f32>(&s, 300, 32000, RowPass::Split);
}
