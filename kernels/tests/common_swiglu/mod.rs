//! The check shared by the emulator and GPU tests of `kernels::gemm::gemm_swiglu`: seeded
//! operands whose products and sums are exact in f32, so the two projections are exact and
//! only the SwiGLU's own arithmetic and the final rounding separate the output from the f64
//! reference.

use kernel_runtime::{Buffer, Stream};
use kernels::Float;

/// Multiples of `step` from −16·`step` to 15·`step`: exact in every 16-bit type for the steps
/// used here, and `k` of their products sum exactly in f32.
pub fn operand(len: usize, seed: u64, step: f32) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 59) as i32 - 16) as f32 * step
        })
        .collect()
}

/// f16's subnormal spacing, 2⁻²⁴: below f16's normal range one step is the most the
/// approximate exponential can move a rounded result (bf16 and f32 steps are finer).
const SUBNORMAL_STEP: f64 = 1.0 / 16_777_216.0;

fn silu(v: f64) -> f64 {
    v / (1.0 + (-v).exp())
}

/// `T`'s value of `v`, as the device rounds it.
fn round<T: Float>(v: f64) -> f64 {
    T::from_f32(v as f32).to_f32() as f64
}

/// Runs `gemm_swiglu` at `m × n × k` on `stream` and compares every output with the f64
/// reference rounded to `T`, allowing one unit in the last place of `T` (`ulp`, relative, or
/// one subnormal step) for the approximate exponential. With `rounded_products`, the reference rounds both
/// products to `T` first, as the unfused form stores them. The output is poisoned with NaN
/// first, so an unwritten element fails. Returns the output's bits, for rerun checks.
#[allow(clippy::too_many_arguments)]
pub fn check<T: Float>(
    stream: &Stream,
    (m, n, k): (usize, usize, usize),
    seed: u64,
    step: f32,
    ulp: f64,
    rounded_products: bool,
) -> Vec<f32> {
    let x = operand(m * k, seed, step);
    let wg = operand(n * k, seed + 1, step);
    let wu = operand(n * k, seed + 2, step);
    let up = |v: &[f32]| {
        let host: Vec<T> = v.iter().map(|&e| T::from_f32(e)).collect();
        Buffer::from_host(stream, &host).expect("upload")
    };
    let (dx, dg, du) = (up(&x), up(&wg), up(&wu));
    let mut out = up(&vec![f32::NAN; m * n]);
    kernels::gemm::gemm_swiglu(stream, &dx, &dg, &du, &mut out, m, n, k).expect("gemm_swiglu");
    let got: Vec<f32> = out
        .to_host(stream)
        .expect("download")
        .into_iter()
        .map(|v| v.to_f32())
        .collect();
    for i in 0..m {
        for j in 0..n {
            let dot = |w: &[f32]| -> f64 {
                (0..k)
                    .map(|p| x[i * k + p] as f64 * w[j * k + p] as f64)
                    .sum()
            };
            let (mut g, mut u) = (dot(&wg), dot(&wu));
            if rounded_products {
                (g, u) = (round::<T>(g), round::<T>(u));
            }
            let want = round::<T>(silu(g) * u);
            let have = got[i * n + j] as f64;
            assert!(
                (have - want).abs() <= want.abs() * ulp + SUBNORMAL_STEP,
                "out[{i}][{j}] of {m} × {n} × {k}: {have}, want {want} (gate {g}, up {u})"
            );
        }
    }
    got
}
