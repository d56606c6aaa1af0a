//! The embedding gather and its backward on the GPU at real shapes.

use crate::common_rowwise::{assert_close, bits, download, gpu_stream, poisoned, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::embedding::{embedding, embedding_backward};
use kernels::Float;

fn embedding_at<T: Float>(s: &Stream) {
    let (tokens, vocab, hidden) = (4096, 5000, 256);
    let mut rng = Rng::new(104);
    let (table, held) = upload::<T>(s, &rng.vec(vocab * hidden, -1.0, 1.0));
    let ids: Vec<u32> = (0..tokens).map(|_| rng.below(vocab as u32)).collect();
    let idb = Buffer::from_host(s, &ids).unwrap();
    let mut out = poisoned::<T>(s, tokens * hidden);
    embedding(s, &table, &idb, &mut out, tokens, vocab, hidden).unwrap();
    let want = kernels::embedding::reference::embedding(&held, &ids, vocab, hidden);
    assert_close("embedding", &download(s, &out), &want, 0.0, 0.0);
    let (dout, dheld) = upload::<T>(s, &rng.vec(tokens * hidden, -1.0, 1.0));
    let mut dtable = poisoned::<T>(s, vocab * hidden);
    embedding_backward(s, &dout, &idb, &mut dtable, tokens, vocab, hidden).unwrap();
    let want = kernels::embedding::reference::embedding_backward(&dheld, &ids, vocab, hidden);
    assert_close(
        "embedding_backward",
        &download(s, &dtable),
        &want,
        2e-2,
        tol::<T>(1e-5),
    );
    let first = bits(s, &dtable);
    embedding_backward(s, &dout, &idb, &mut dtable, tokens, vocab, hidden).unwrap();
    assert_eq!(bits(s, &dtable), first, "two runs are bit-identical");
}

#[test]
fn embedding_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    embedding_at::<f32>(&s);
    embedding_at::<Bf16>(&s);
}
