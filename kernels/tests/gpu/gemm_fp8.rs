//! The fp8 GEMM on an sm_90 GPU at real shapes, against the f64 reference within what
//! Hopper's fp8 accumulation keeps.

use crate::common_fp8::{check, Accuracy};
use crate::common_tensor::gpu;
use kernel_runtime::Bf16;
use kernels::gemm::Fp8Format::{E4m3, E5m2};

#[test]
fn gpu_fp8_gemm_matches_the_reference_at_real_shapes() {
    let Some(s) = gpu() else { return };
    if s.device().target().sm() != 90 {
        eprintln!("skipping: the fp8 GEMM runs on sm_90 (wgmma)");
        return;
    }
    // The second has more tiles than an H100 or H200 has SMs: blocks walk a second tile.
    for (m, n, k) in [(512, 512, 512), (2100, 2600, 1040), (1000, 1030, 4096)] {
        check::<f32>(&s, m, n, k, E4m3, E4m3, 7, Accuracy::Relative(5));
    }
    check::<Bf16>(&s, 1000, 1030, 4096, E4m3, E5m2, 9, Accuracy::Relative(5));
    check::<f32>(&s, 700, 300, 256, E5m2, E4m3, 11, Accuracy::Relative(5));
}
