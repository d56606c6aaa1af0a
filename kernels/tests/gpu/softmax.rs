//! Softmax forward and backward on the GPU at real shapes.

use crate::common_rowwise::{assert_close, bits, download, gpu_stream, poisoned, tol, upload, Rng};
use kernel_runtime::{Bf16, Stream};
use kernels::softmax::{softmax, softmax_backward, Mask};
use kernels::Float;

fn softmax_at<T: Float>(s: &Stream, rows: usize, cols: usize, mask: Mask) {
    let mut rng = Rng::new(101);
    let (x, xs) = upload::<T>(s, &rng.vec(rows * cols, -6.0, 6.0));
    let mut y = poisoned::<T>(s, rows * cols);
    softmax(s, &x, &mut y, rows, cols, 0.3, mask).unwrap();
    let got = download(s, &y);
    let want = kernels::softmax::reference::softmax(&xs, rows, cols, 0.3, mask);
    assert_close(
        &format!("softmax {rows}×{cols}"),
        &got,
        &want,
        1e-7,
        tol::<T>(2e-5),
    );
    let first = bits(s, &y);
    softmax(s, &x, &mut y, rows, cols, 0.3, mask).unwrap();
    assert_eq!(bits(s, &y), first, "two runs are bit-identical");

    let (dy, dys) = upload::<T>(s, &rng.vec(rows * cols, -1.0, 1.0));
    let mut dx = poisoned::<T>(s, rows * cols);
    softmax_backward(s, &y, &dy, &mut dx, rows, cols, 0.3).unwrap();
    let want = kernels::softmax::reference::softmax_backward(&got, &dys, rows, cols, 0.3);
    assert_close(
        "softmax_backward",
        &download(s, &dx),
        &want,
        1e-6,
        tol::<T>(1e-4),
    );
}

#[test]
fn softmax_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    softmax_at::<f32>(&s, 64, 4096, Mask::None);
    softmax_at::<Bf16>(&s, 64, 4096, Mask::Causal { queries: 64 });
    softmax_at::<f32>(&s, 6, 32001, Mask::None);
    softmax_at::<Bf16>(&s, 3, 50000, Mask::Causal { queries: 3 });
}
