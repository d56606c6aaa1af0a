//! CPU references for the softmax ops, computed in f64.

use super::Mask;

/// `softmax(scale · x)` over each row of a `rows × cols` matrix, masked entries 0.
///
/// ```
/// use kernels::softmax::{reference, Mask};
/// let y = reference::softmax(&[0.0, 0.0, 5.0, 1.0], 2, 2, 1.0, Mask::Causal { queries: 2 });
/// assert_eq!(y[..2], [1.0, 0.0]);
/// assert!((y[2] + y[3] - 1.0).abs() < 1e-12);
/// ```
pub fn softmax(x: &[f32], rows: usize, cols: usize, scale: f32, mask: Mask) -> Vec<f64> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let limit = mask.limit(r, cols);
        let row = &x[r * cols..(r + 1) * cols];
        let t: Vec<f64> = row[..=limit]
            .iter()
            .map(|&v| v as f64 * scale as f64)
            .collect();
        let m = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = t.iter().map(|&v| (v - m).exp()).sum();
        for (j, &v) in t.iter().enumerate() {
            y[r * cols + j] = (v - m).exp() / s;
        }
    }
    y
}

/// `dx = scale · y ⊙ (dy − ⟨y, dy⟩)` over each row.
///
/// ```
/// let dx = kernels::softmax::reference::softmax_backward(&[0.5, 0.5], &[1.0, 0.0], 1, 2, 1.0);
/// assert_eq!(dx, vec![0.25, -0.25]);
/// ```
pub fn softmax_backward(y: &[f32], dy: &[f32], rows: usize, cols: usize, scale: f32) -> Vec<f64> {
    let mut dx = vec![0.0; rows * cols];
    for r in 0..rows {
        let span = r * cols..(r + 1) * cols;
        let dot: f64 = y[span.clone()]
            .iter()
            .zip(&dy[span.clone()])
            .map(|(&a, &g)| a as f64 * g as f64)
            .sum();
        for j in span {
            dx[j] = scale as f64 * y[j] as f64 * (dy[j] as f64 - dot);
        }
    }
    dx
}
