//! CPU reference of gradient clipping, in f64.

/// `(‖g‖₂, min(1, max_norm / (‖g‖₂ + 1e-6)))`, with scale 1 when the norm is not finite.
///
/// ```
/// let (norm, scale) = kernels::clip::reference::norm_and_scale(&[3.0, 4.0], 1.0);
/// assert_eq!(norm, 5.0);
/// assert!((scale - 1.0 / (5.0 + 1e-6)).abs() < 1e-15);
/// ```
pub fn norm_and_scale(grads: &[f64], max_norm: f64) -> (f64, f64) {
    let norm = grads.iter().map(|g| g * g).sum::<f64>().sqrt();
    let scale = if norm.is_finite() {
        (max_norm / (norm + 1e-6)).min(1.0)
    } else {
        1.0
    };
    (norm, scale)
}
