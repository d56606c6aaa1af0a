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

#[test]
fn gpu_fp8_quantization_rounds_as_the_host_encoding_does() {
    let Some(s) = gpu() else { return };
    if s.device().target().sm() < 89 {
        eprintln!("skipping: fp8 conversion needs sm_89");
        return;
    }
    // Seeded values over the whole range of both formats, both signs, some past the top.
    let mut seed = 5u64;
    let x: Vec<f32> = (0..1 << 20)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mag = f32::from_bits(0x3000_0000 + ((seed >> 33) as u32 % 0x1800_0000));
            if seed >> 63 == 1 {
                -mag
            } else {
                mag
            }
        })
        .collect();
    let scale = 0.75f32;
    let dx = kernel_runtime::Buffer::from_host(&s, &x).unwrap();
    let dscale = kernel_runtime::Buffer::from_host(&s, &[scale]).unwrap();
    for format in [E4m3, E5m2] {
        let q = kernels::gemm::Fp8Matrix::quantize(&s, format, &dx, 1 << 16, 16, &dscale).unwrap();
        let got = q.to_bytes(&s).unwrap();
        for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
            assert_eq!(g, format.encode(v / scale), "{format:?} x[{i}] = {v}");
        }
    }
}
