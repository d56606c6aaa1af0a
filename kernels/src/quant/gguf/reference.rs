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

/// Rows of activations quantized to int8 in blocks of 32, on the host: what
/// [`QuantizedActivations::to_host`](super::QuantizedActivations::to_host) reads back and
/// what [`quantize_activations`] computes.
#[derive(Clone, Debug, PartialEq)]
pub struct Int8Activations {
    pub rows: usize,
    pub cols: usize,
    /// `rows × cols` int8 values.
    pub q: Vec<i8>,
    /// `rows × cols / 32` block scales.
    pub d: Vec<f32>,
    /// `rows × cols / 32` sums `d·Σq`.
    pub s: Vec<f32>,
}

impl Int8Activations {
    /// The values the int8 model stands for, `q·d`, row-major.
    ///
    /// ```
    /// use kernels::quant::gguf::reference::quantize_activations;
    /// let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
    /// let q = quantize_activations(&x, 1, 32);
    /// assert_eq!(q.dequantize()[31], 31.0);
    /// ```
    pub fn dequantize(&self) -> Vec<f32> {
        self.q
            .iter()
            .enumerate()
            .map(|(i, &q)| q as f32 * self.d[i / 32])
            .collect()
    }
}

/// The int8 quantization of the `m × k` rows of `x` ([`QuantizedActivations`](super::QuantizedActivations)'s
/// definition), step for step as the kernel does it: per block of 32, `d = max|x| / 127`,
/// `q = round_ties_even(x · (1/d))`, `s = d·Σq`, all in f32.
///
/// ```
/// use kernels::quant::gguf::reference::quantize_activations;
/// let q = quantize_activations(&[0.5f32; 32], 1, 32);
/// assert_eq!((q.q[0], q.d[0], q.s[0]), (127, 0.5 / 127.0, 0.5 / 127.0 * 4064.0));
/// ```
pub fn quantize_activations(x: &[f32], m: usize, k: usize) -> Int8Activations {
    let mut out = Int8Activations {
        rows: m,
        cols: k,
        q: vec![0; m * k],
        d: vec![0.0; m * k / 32],
        s: vec![0.0; m * k / 32],
    };
    for (b, block) in x[..m * k].chunks_exact(32).enumerate() {
        let amax = block.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let inv = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut sum = 0i32;
        for (j, v) in block.iter().enumerate() {
            let q = (v * inv).round_ties_even() as i32;
            out.q[32 * b + j] = q as i8;
            sum += q;
        }
        out.d[b] = d;
        out.s[b] = d * sum as f32;
    }
    out
}

/// `rmsnorm(x)` in f32 as the fused quantization kernel computes it, then
/// [`quantize_activations`]: `x · rstd · γ` with `rstd = 1 / sqrt(Σx² / k + eps)`, the sum of
/// squares taken in the kernel's order (thread `t` of 256 sums elements `t, t + 256, …` with
/// FMAs, a butterfly over each warp, then the eight warps in order), so the bits agree.
///
/// ```
/// use kernels::quant::gguf::reference::quantize_activations_rms_norm;
/// let q = quantize_activations_rms_norm(&[3.0f32; 256], &[1.0f32; 256], 0.0, 1, 256);
/// assert_eq!(q.q[0], 127); // every value normalizes to 1
/// ```
pub fn quantize_activations_rms_norm(
    x: &[f32],
    gamma: &[f32],
    eps: f32,
    m: usize,
    k: usize,
) -> Int8Activations {
    let mut normed = vec![0.0f32; m * k];
    for i in 0..m {
        let row = &x[i * k..i * k + k];
        let mut threads = [0.0f32; 256];
        for (t, ss) in threads.iter_mut().enumerate() {
            for v in row.iter().skip(t).step_by(256) {
                *ss = v.mul_add(*v, *ss);
            }
        }
        let mut total = 0.0f32;
        for (w, warp) in threads.chunks_exact(32).enumerate() {
            let mut lanes: Vec<f32> = warp.to_vec();
            for d in [16, 8, 4, 2, 1] {
                lanes = (0..32).map(|l| lanes[l] + lanes[l ^ d]).collect();
            }
            total = if w == 0 { lanes[0] } else { total + lanes[0] };
        }
        let rstd = 1.0 / (total / k as f32 + eps).sqrt();
        for l in 0..k {
            normed[i * k + l] = row[l] * rstd * gamma[l];
        }
    }
    quantize_activations(&normed, m, k)
}
