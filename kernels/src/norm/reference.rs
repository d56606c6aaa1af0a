//! CPU references of the norms, computed in f64 from the stored inputs.

/// RMSNorm of each row: `y = x / √(mean(x²) + eps) · γ`.
///
/// ```
/// let y = kernels::norm::reference::rms_norm(&[3.0, 4.0], &[1.0, 2.0], 1, 2, 0.0);
/// let r = (12.5f64).sqrt();
/// assert!((y[0] - 3.0 / r).abs() < 1e-12 && (y[1] - 8.0 / r).abs() < 1e-12);
/// ```
pub fn rms_norm(x: &[f64], gamma: &[f64], rows: usize, cols: usize, eps: f64) -> Vec<f64> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let rstd = rms_rstd(row, eps);
        for c in 0..cols {
            y[r * cols + c] = row[c] * rstd * gamma[c];
        }
    }
    y
}

/// `1 / √(mean(x²) + eps)` of one row.
pub fn rms_rstd(row: &[f64], eps: f64) -> f64 {
    let ms = row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64;
    1.0 / (ms + eps).sqrt()
}

/// RMSNorm backward: `(dx, dγ)` for upstream gradient `dy`.
///
/// `dx_j = rstd·γ_j·dy_j − x_j·rstd³/n · Σ_i dy_i·γ_i·x_i`, `dγ_j = Σ_rows dy_j·x_j·rstd`.
///
/// ```
/// let (dx, dg) = kernels::norm::reference::rms_norm_backward(
///     &[1.0, 2.0], &[1.0, 1.0], &[1.0, 0.0], 1, 2, 0.0);
/// assert_eq!((dx.len(), dg.len()), (2, 2));
/// ```
pub fn rms_norm_backward(
    x: &[f64],
    gamma: &[f64],
    dy: &[f64],
    rows: usize,
    cols: usize,
    eps: f64,
) -> (Vec<f64>, Vec<f64>) {
    let mut dx = vec![0.0; rows * cols];
    let mut dgamma = vec![0.0; cols];
    for r in 0..rows {
        let xr = &x[r * cols..(r + 1) * cols];
        let dyr = &dy[r * cols..(r + 1) * cols];
        let rstd = rms_rstd(xr, eps);
        let dot: f64 = (0..cols).map(|c| dyr[c] * gamma[c] * xr[c]).sum();
        let coef = dot * rstd * rstd * rstd / cols as f64;
        for c in 0..cols {
            dx[r * cols + c] = rstd * gamma[c] * dyr[c] - xr[c] * coef;
            dgamma[c] += dyr[c] * xr[c] * rstd;
        }
    }
    (dx, dgamma)
}

/// LayerNorm of each row: `y = (x − mean) / √(var + eps) · γ + β` (biased variance).
///
/// ```
/// let y = kernels::norm::reference::layer_norm(&[1.0, 3.0], &[1.0, 1.0], &[0.5, 0.5], 1, 2, 0.0);
/// assert!((y[0] + 0.5).abs() < 1e-12 && (y[1] - 1.5).abs() < 1e-12);
/// ```
pub fn layer_norm(
    x: &[f64],
    gamma: &[f64],
    beta: &[f64],
    rows: usize,
    cols: usize,
    eps: f64,
) -> Vec<f64> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let (mean, rstd) = layer_stats(row, eps);
        for c in 0..cols {
            y[r * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
        }
    }
    y
}

/// `(mean, 1/√(var + eps))` of one row.
pub fn layer_stats(row: &[f64], eps: f64) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().sum::<f64>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// LayerNorm backward: `(dx, dγ, dβ)`.
///
/// With `x̂ = (x − mean)·rstd` and `g = γ·dy`:
/// `dx = rstd · (g − mean(g) − x̂ · mean(g·x̂))`, `dγ = Σ_rows dy·x̂`, `dβ = Σ_rows dy`.
///
/// ```
/// let (dx, dg, db) = kernels::norm::reference::layer_norm_backward(
///     &[1.0, 3.0], &[1.0, 1.0], &[1.0, 0.0], 1, 2, 0.0);
/// assert!((dx[0] + dx[1]).abs() < 1e-12); // dx sums to zero over a row
/// assert_eq!(db, vec![1.0, 0.0]);
/// # let _ = dg;
/// ```
pub fn layer_norm_backward(
    x: &[f64],
    gamma: &[f64],
    dy: &[f64],
    rows: usize,
    cols: usize,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut dx = vec![0.0; rows * cols];
    let mut dgamma = vec![0.0; cols];
    let mut dbeta = vec![0.0; cols];
    let n = cols as f64;
    for r in 0..rows {
        let xr = &x[r * cols..(r + 1) * cols];
        let dyr = &dy[r * cols..(r + 1) * cols];
        let (mean, rstd) = layer_stats(xr, eps);
        let xhat: Vec<f64> = xr.iter().map(|v| (v - mean) * rstd).collect();
        let g: Vec<f64> = (0..cols).map(|c| gamma[c] * dyr[c]).collect();
        let mean_g = g.iter().sum::<f64>() / n;
        let mean_gx = (0..cols).map(|c| g[c] * xhat[c]).sum::<f64>() / n;
        for c in 0..cols {
            dx[r * cols + c] = rstd * (g[c] - mean_g - xhat[c] * mean_gx);
            dgamma[c] += dyr[c] * xhat[c];
            dbeta[c] += dyr[c];
        }
    }
    (dx, dgamma, dbeta)
}
