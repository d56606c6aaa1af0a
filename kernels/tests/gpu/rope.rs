//! RoPE on the GPU at real shapes.

use crate::common_rowwise::{assert_close, download, gpu_stream, poisoned, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::rope::{rope, rope_backward, Rope, RopeLayout};
use kernels::Float;

fn rope_at<T: Float>(
    s: &Stream,
    layout: RopeLayout,
    [tokens, heads, head_dim, rotary_dim]: [usize; 4],
) {
    let n = tokens * heads * head_dim;
    let mut rng = Rng::new(102);
    let spec = Rope {
        layout,
        theta: 10000.0,
        rotary_dim,
    };
    let (x, xs) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
    let pos: Vec<u32> = (0..tokens).map(|_| rng.below(4096)).collect();
    let positions = Buffer::from_host(s, &pos).unwrap();
    let mut y = poisoned::<T>(s, n);
    rope(s, &x, &positions, &mut y, tokens, heads, head_dim, spec).unwrap();
    let want = kernels::rope::reference::rope(&xs, &pos, heads, head_dim, spec);
    // At positions up to 4095, f32 angles carry up to ~1.2e-3 rad of error (ex2.approx and
    // the f32 product), times |x| ≤ 2.
    assert_close("rope", &download(s, &y), &want, 5e-3, tol::<T>(1e-5));
    let mut dx = poisoned::<T>(s, n);
    rope_backward(s, &x, &positions, &mut dx, tokens, heads, head_dim, spec).unwrap();
    let want = kernels::rope::reference::rope_backward(&xs, &pos, heads, head_dim, spec);
    assert_close(
        "rope_backward",
        &download(s, &dx),
        &want,
        5e-3,
        tol::<T>(1e-5),
    );
}

#[test]
fn rope_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    rope_at::<f32>(&s, RopeLayout::NeoX, [512, 32, 128, 128]);
    rope_at::<Bf16>(&s, RopeLayout::NeoX, [512, 32, 128, 64]);
    rope_at::<f32>(&s, RopeLayout::Interleaved, [512, 32, 128, 128]);
    rope_at::<Bf16>(&s, RopeLayout::Interleaved, [512, 32, 128, 96]);
}

/// Head dim 34: token rows staged through shared memory, 16 bytes at a time where each row
/// starts aligned (32 heads) and one element at a time where it does not (3 heads), over more
/// tokens than the grid has blocks.
#[test]
fn staged_rope_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    rope_at::<f32>(&s, RopeLayout::NeoX, [512, 32, 34, 34]);
    rope_at::<Bf16>(&s, RopeLayout::NeoX, [512, 32, 34, 30]);
    rope_at::<Bf16>(&s, RopeLayout::Interleaved, [512, 32, 34, 34]);
    rope_at::<f32>(&s, RopeLayout::Interleaved, [70_000, 3, 34, 34]);
    rope_at::<Bf16>(&s, RopeLayout::NeoX, [70_000, 3, 34, 34]);
}
