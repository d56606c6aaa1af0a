//! The flash-attention backward on the GPU at real shapes (a ragged batch of up to 1000
//! tokens a sequence, 8 query heads over 2 kv heads, every head size, both masks) against the
//! f64 reference, with bit-identical reruns, on every path the device runs (`wgmma` and
//! `mma.sync` on Hopper); and a small case of each head size for the sanitizers.

use crate::common_attention::{assert_gradients, bits, download, Case, Problem};
use crate::common_rowwise::gpu_stream;
use kernel_runtime::{Bf16, Stream, F16};
use kernels::attention::{AttentionPath, HalfElement, Heads, Mask};

fn check_on_gpu<T: HalfElement>(s: &Stream, dim: usize, mask: Mask, seed: u64) {
    check_case::<T>(
        s,
        Case {
            lens: vec![1000, 3, 300, 77],
            heads: Heads { q: 8, kv: 2, dim },
            mask,
            seed,
        },
    );
}

fn check_case<T: HalfElement>(s: &Stream, case: Case) {
    let p = Problem::<T>::new(s, &case);
    let want = p.reference();
    for path in AttentionPath::available(s.device().target()) {
        let out = p.run_on(s, path);
        let got = out.each_ref().map(|b| download(s, b));
        assert_gradients::<T>(&format!("{path:?} {case:?}"), got, &want);
        let again = p.run_on(s, path);
        for (a, b) in out.iter().zip(&again) {
            assert_eq!(
                bits(s, a),
                bits(s, b),
                "{path:?}: two runs are bit-identical"
            );
        }
    }
}

#[test]
fn flash_backward_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    check_on_gpu::<Bf16>(&s, 64, Mask::Causal, 11);
    check_on_gpu::<F16>(&s, 128, Mask::Full, 12);
    check_on_gpu::<Bf16>(&s, 256, Mask::Full, 13);
    check_on_gpu::<Bf16>(&s, 128, Mask::Causal, 14);
    check_on_gpu::<F16>(&s, 256, Mask::Causal, 15);
}

/// Every head size and both masks at a size `compute-sanitizer`'s racecheck finishes in seconds
/// (`scripts/gpu-sanitize.sh … flash_backward_at_small_shapes`): a ragged pair of sequences,
/// 4 query heads over 2 kv heads.
#[test]
fn flash_backward_at_small_shapes_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    for (i, dim) in [64, 128, 256].into_iter().enumerate() {
        for mask in [Mask::Causal, Mask::Full] {
            check_case::<Bf16>(
                &s,
                Case {
                    lens: vec![70, 5],
                    heads: Heads { q: 4, kv: 2, dim },
                    mask,
                    seed: 20 + i as u64,
                },
            );
        }
    }
}
