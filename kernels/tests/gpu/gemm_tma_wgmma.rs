//! The `#[kernel]` Hopper GEMM (TMA, mbarriers, `wgmma`) on an sm_90 GPU at real shapes.

use crate::common_tensor::gpu;
use crate::common_tma_wgmma::check;

#[test]
fn gpu_tma_wgmma_gemm_matches_the_reference_at_real_shapes() {
    let Some(s) = gpu() else { return };
    // The last two have more tiles than an H100 or H200 has SMs: blocks walk a second tile.
    let shapes = [
        (512, 512, 512),
        (1000, 1030, 4096),
        (4864, 896, 1024),
        (2100, 2600, 72),
    ];
    for (m, n, k) in shapes {
        check(&s, m, n, k, 7);
    }
}
