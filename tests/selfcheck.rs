//! Every builder sample, emitted, loaded through the runtime and run on the CPU emulator,
//! matches its CPU reference (the README's main job, as a test).

use ptxkit::runtime::Device;
use ptxkit::selfcheck::{run_all, Scale};

#[test]
fn every_sample_matches_its_cpu_reference_on_the_emulator() {
    let device = Device::emulator();
    for seed in [1, 2] {
        let results = run_all(&device, Scale::Small, seed).unwrap();
        assert_eq!(results.len(), 6);
        for r in &results {
            assert!(
                r.passed(),
                "{}: error {:e} over tolerance {:e} (seed {seed})",
                r.kernel,
                r.max_rel_error,
                r.tolerance
            );
        }
        let ran: Vec<&str> = results
            .iter()
            .filter(|r| r.skipped.is_none())
            .map(|r| r.kernel)
            .collect();
        assert_eq!(
            ran,
            [
                "vector_add",
                "saxpy",
                "block_reduce_sum",
                "transpose_32x32",
                "mma_bf16_16x8x16",
                // On an sm_90a emulator of its own: the emulator runs wgmma.
                "wgmma_bf16_64x8x16"
            ]
        );
    }
}

#[test]
fn a_wrong_reference_would_be_caught() {
    // The comparison itself: NaN (an unwritten output) and a wrong value both fail.
    assert_eq!(
        ptxkit::selfcheck::max_rel_error(&[1.0, f64::NAN], &[1.0, 2.0]),
        f64::INFINITY
    );
    assert!(ptxkit::selfcheck::max_rel_error(&[1.0, 2.5], &[1.0, 2.0]) > 0.2);
    assert_eq!(
        ptxkit::selfcheck::max_rel_error(&[1.0, 2.0], &[1.0, 2.0]),
        0.0
    );
}
