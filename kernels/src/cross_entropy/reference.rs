//! The CPU reference of the fused cross-entropy, in f64.

/// What [`cross_entropy`](super::cross_entropy) computes, in f64.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// Mean loss over the rows whose target is not ignored.
    pub loss: f64,
    /// Rows whose target is not ignored.
    pub count: usize,
    /// Each row's loss (0 where ignored).
    pub row_loss: Vec<f64>,
    /// `d loss / d logits`.
    pub dlogits: Vec<f64>,
}

/// Softmax cross-entropy of `rows × cols` logits against `targets`, mean over the rows whose
/// target is not `ignore_index`.
///
/// ```
/// let r = kernels::cross_entropy::reference(&[0.0, 0.0, 1.0, 2.0], &[1, -100], 2, 2, -100);
/// assert_eq!(r.count, 1);
/// assert!((r.loss - 2f64.ln()).abs() < 1e-12);
/// assert_eq!(r.dlogits, vec![0.5, -0.5, 0.0, 0.0]);
/// ```
pub fn reference(
    logits: &[f32],
    targets: &[i32],
    rows: usize,
    cols: usize,
    ignore_index: i32,
) -> Reference {
    let count = targets[..rows]
        .iter()
        .filter(|&&t| t != ignore_index)
        .count();
    let mut row_loss = vec![0.0; rows];
    let mut dlogits = vec![0.0; rows * cols];
    for r in 0..rows {
        let t = targets[r];
        if t == ignore_index {
            continue;
        }
        let row = &logits[r * cols..(r + 1) * cols];
        let m = row
            .iter()
            .map(|&v| v as f64)
            .fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        let lse = m + s.ln();
        row_loss[r] = lse - row[t as usize] as f64;
        for (j, &v) in row.iter().enumerate() {
            let p = (v as f64 - lse).exp();
            let hit = if j == t as usize { 1.0 } else { 0.0 };
            dlogits[r * cols + j] = (p - hit) / count as f64;
        }
    }
    Reference {
        loss: row_loss.iter().sum::<f64>() / count as f64,
        count,
        row_loss,
        dlogits,
    }
}
