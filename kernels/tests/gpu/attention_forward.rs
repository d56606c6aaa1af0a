//! The flash-attention forward on the GPU at real shapes: ragged batches of up to a thousand
//! tokens a sequence, GQA 8/2, every head dim, both masks and both element types, against the
//! f64 reference, and a rerun that must be bit-identical; on Hopper over both paths.

use crate::common_flash_forward::{check, run, upload, Case};
use crate::common_rowwise::gpu_stream;
use kernel_runtime::{Bf16, Stream, F16};
use kernels::attention::{AttentionPath, HalfElement, Mask};

fn forward_at<T: HalfElement>(s: &Stream, lens: &[usize], dim: usize, mask: Mask) {
    for path in AttentionPath::available(s.device().target()) {
        forward_on::<T>(s, path, lens, dim, mask);
    }
}

fn forward_on<T: HalfElement>(
    s: &Stream,
    path: AttentionPath,
    lens: &[usize],
    dim: usize,
    mask: Mask,
) {
    let mut case = Case::new(lens, 8, 2, dim, mask);
    case.seed = dim as u64 + 31 * lens.len() as u64;
    case.path = Some(path);
    let first = check::<T>(s, &case);
    let (o, lse) = run::<T>(s, &case, &upload::<T>(s, &case));
    let again: Vec<u32> = o
        .iter()
        .map(|x| x.to_bits())
        .chain(lse.iter().map(|x| x.to_bits()))
        .collect();
    assert!(again == first, "{case:?}: a rerun differs");
}

#[test]
fn flash_forward_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    forward_at::<Bf16>(&s, &[1000, 313, 1, 577], 128, Mask::Causal);
    forward_at::<F16>(&s, &[700, 129], 128, Mask::Full);
    forward_at::<Bf16>(&s, &[1000, 65, 255], 64, Mask::Full);
    forward_at::<F16>(&s, &[999, 64, 2], 64, Mask::Causal);
    forward_at::<Bf16>(&s, &[600, 37], 256, Mask::Causal);
    forward_at::<F16>(&s, &[300, 257], 256, Mask::Full);
}
