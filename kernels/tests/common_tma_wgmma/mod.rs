//! The check shared by the emulator and GPU tests of the `#[kernel]` Hopper GEMM
//! (`kernels::gemm::tma_wgmma_bf16_nt`): seeded operands whose products and sums are exact in
//! f32, so the result must equal the f64 reference bit for bit.

use kernel_runtime::{Bf16, Buffer, Stream};

/// Eighths from -2 to 2: exact in bf16, and `k` of their products sum exactly in f32 for
/// `k` up to 2^16.
fn operand(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 59) as i32 - 16) as f32 / 8.0
        })
        .collect()
}

/// Runs `c = a · bᵀ` at `m × n × k` on `stream` and compares every element with the f64
/// product; `c` is poisoned with NaN first, so an unwritten element fails.
pub fn check(stream: &Stream, m: usize, n: usize, k: usize, seed: u64) {
    let a = operand(m * k, seed);
    let b = operand(n * k, seed + 1);
    let bf = |v: &[f32]| v.iter().map(|&x| Bf16::from_f32(x)).collect::<Vec<_>>();
    let da = Buffer::from_host(stream, &bf(&a)).expect("upload a");
    let db = Buffer::from_host(stream, &bf(&b)).expect("upload b");
    let mut c = Buffer::from_host(stream, &vec![f32::NAN; m * n]).expect("upload c");
    kernels::gemm::tma_wgmma_bf16_nt(stream, &da, &db, &mut c, m as u32, n as u32, k as u32)
        .expect("the GEMM launches");
    let c = c.to_host(stream).expect("download c");
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[j * k + p] as f64)
                .sum();
            assert_eq!(c[i * n + j] as f64, want, "c[{i}][{j}] of {m} × {n} × {k}");
        }
    }
}
