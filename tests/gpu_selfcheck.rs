//! The samples on a real GPU at full size (including the sm_90a wgmma tile on Hopper). Skips
//! with one line where no GPU is present.

use ptxkit::runtime::Device;
use ptxkit::selfcheck::{run_all, Scale};

#[test]
fn every_sample_matches_its_cpu_reference_on_the_gpu() {
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("skipping: no CUDA driver/GPU present ({e})");
            return;
        }
    };
    let results = run_all(&device, Scale::Large, 3).unwrap();
    for r in &results {
        println!(
            "{} {} err {:e} {:?}",
            r.kernel, r.shape, r.max_rel_error, r.skipped
        );
        assert!(
            r.passed(),
            "{}: error {:e} over tolerance {:e}",
            r.kernel,
            r.max_rel_error,
            r.tolerance
        );
    }
    if device.target().sm() == 90 {
        assert!(
            results.iter().all(|r| r.skipped.is_none()),
            "on Hopper every sample, wgmma included, must run"
        );
    }
}
