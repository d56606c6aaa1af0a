//! The check shared by the emulator and GPU tests of the fp8 GEMM (`kernels::gemm::gemm_fp8`):
//! seeded quarters in [-2, 2), exact in both fp8 formats, against an f64 reference of the
//! scaled product.

use kernel_runtime::{Buffer, Stream};
use kernels::gemm::{gemm_fp8, Fp8Format, Fp8Matrix};
use kernels::{Float, FloatType};

/// Quarters from -2 to 1.75: exact in e4m3 and e5m2, their products sixteenths.
pub fn operand(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 60) as i32 - 8) as f32 / 4.0
        })
        .collect()
}

/// How close the result must be to the f64 reference: the emulator tests use one variant,
/// the GPU tests the other.
#[derive(Clone, Copy)]
#[allow(dead_code)]
pub enum Accuracy {
    /// Bit for bit: the reference summed in f64, rounded to f32 once, scaled in f32 (the
    /// emulator's tensor core sums exactly and rounds once).
    Exact,
    /// Within `2^-bits` of the sum of the products' magnitudes: Hopper's fp8 tensor cores
    /// keep fewer mantissa bits than f32 while they accumulate (about 14, so a few percent
    /// of the magnitudes at k = 4096).
    Relative(i32),
}

/// Runs `c = sa · sb · a · bᵀ` at `m × n × k` in the formats `fa`, `fb` on `stream` into `O`
/// and compares every element with the reference; `c` is poisoned with NaN first, so an
/// unwritten element fails.
#[allow(clippy::too_many_arguments)]
pub fn check<O: Float>(
    stream: &Stream,
    m: usize,
    n: usize,
    k: usize,
    fa: Fp8Format,
    fb: Fp8Format,
    seed: u64,
    accuracy: Accuracy,
) {
    let a = operand(m * k, seed);
    let b = operand(n * k, seed + 1);
    let (sa, sb) = (0.75f32, 2.5f32);
    let da = Fp8Matrix::from_f32(stream, fa, m as u32, k as u32, &a).expect("upload a");
    let db = Fp8Matrix::from_f32(stream, fb, n as u32, k as u32, &b).expect("upload b");
    let scales = Buffer::from_host(stream, &[sa, sb]).expect("upload the scales");
    let mut c = Buffer::from_host(stream, &vec![O::from_f32(f32::NAN); m * n]).expect("upload c");
    gemm_fp8(stream, &da, &db, &scales, &mut c).expect("the GEMM launches");
    let c = c.to_host(stream).expect("download c");
    for i in 0..m {
        for j in 0..n {
            let products = (0..k).map(|p| a[i * k + p] as f64 * b[j * k + p] as f64);
            let sum: f64 = products.clone().sum();
            let got = c[i * n + j].to_f32();
            let want = O::from_f32(sum as f32 * (sa * sb)).to_f32();
            match accuracy {
                Accuracy::Exact => assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "c[{i}][{j}] of {m} × {n} × {k}: {got} against {want}"
                ),
                Accuracy::Relative(bits) => {
                    let size: f64 = products.map(f64::abs).sum();
                    // A bf16 output adds its own rounding, half a unit in 8 bits.
                    let rounding = if O::TYPE == FloatType::Bf16 {
                        2f64.powi(-8)
                    } else {
                        0.0
                    };
                    let bound = (sa * sb) as f64 * size * 2f64.powi(-bits)
                        + (sum * (sa * sb) as f64).abs() * rounding;
                    assert!(
                        (got as f64 - sum * (sa * sb) as f64).abs() <= bound,
                        "c[{i}][{j}] of {m} × {n} × {k}: {got} against {}",
                        sum * (sa * sb) as f64
                    );
                }
            }
        }
    }
}
