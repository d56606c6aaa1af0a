//! The f64 CPU references the tests compare the products with.

/// `y = x·Wᵀ` in f64: `x` is `m × k`, `w` is `n × k` (the dequantized weights), `y` is
/// `m × n`.
///
/// ```
/// let y = kernels::quant::gguf::reference::matmul_nt(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], 1, 2, 2);
/// assert_eq!(y, vec![11.0, 17.0]);
/// ```
pub fn matmul_nt(x: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut y = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            y[i * n + j] = (0..k)
                .map(|l| x[i * k + l] as f64 * w[j * k + l] as f64)
                .sum();
        }
    }
    y
}

/// `rmsnorm(x)` in f64, row by row: `x · γ / sqrt(mean(x²) + eps)`; `x` is `m × k`.
///
/// ```
/// let y = kernels::quant::gguf::reference::rms_norm(&[3.0, 4.0], &[1.0, 2.0], 0.0, 1, 2);
/// let r = (12.5f64).sqrt();
/// assert!((y[0] - 3.0 / r).abs() < 1e-12 && (y[1] - 8.0 / r).abs() < 1e-12);
/// ```
pub fn rms_norm(x: &[f32], gamma: &[f32], eps: f32, m: usize, k: usize) -> Vec<f64> {
    let mut y = vec![0.0f64; m * k];
    for i in 0..m {
        let row = &x[i * k..i * k + k];
        let ms = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / k as f64;
        let r = 1.0 / (ms + eps as f64).sqrt();
        for l in 0..k {
            y[i * k + l] = row[l] as f64 * r * gamma[l] as f64;
        }
    }
    y
}
