//! CPU reference of the AdamW step, in f64.

/// AdamW hyperparameters (PyTorch's names and defaults where it has them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWConfig {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    /// Decoupled weight decay, applied to tensors marked for decay.
    pub weight_decay: f32,
}

impl Default for AdamWConfig {
    /// `lr = 1e-3, betas = (0.9, 0.999), eps = 1e-8, weight_decay = 0.01`.
    ///
    /// ```
    /// assert_eq!(kernels::optim::AdamWConfig::default().beta2, 0.999);
    /// ```
    fn default() -> AdamWConfig {
        AdamWConfig {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

/// One AdamW step on one element at step `t` (1-based): returns the new `(p, m, v)`.
///
/// ```
/// use kernels::optim::{reference::adamw, AdamWConfig};
/// let cfg = AdamWConfig { weight_decay: 0.0, ..AdamWConfig::default() };
/// let (p, m, v) = adamw(&cfg, 1, true, 1.0, 0.5, 0.0, 0.0);
/// // The first step moves by about lr in the direction of -sign(g).
/// assert!((p - (1.0 - 1e-3)).abs() < 1e-8 && m > 0.0 && v > 0.0);
/// ```
pub fn adamw(
    cfg: &AdamWConfig,
    t: u32,
    decay: bool,
    p: f64,
    g: f64,
    m: f64,
    v: f64,
) -> (f64, f64, f64) {
    let (lr, b1, b2) = (cfg.lr as f64, cfg.beta1 as f64, cfg.beta2 as f64);
    let wd = if decay { cfg.weight_decay as f64 } else { 0.0 };
    let p = p * (1.0 - lr * wd);
    let m = b1 * m + (1.0 - b1) * g;
    let v = b2 * v + (1.0 - b2) * g * g;
    let bc1 = 1.0 - b1.powi(t as i32);
    let bc2 = 1.0 - b2.powi(t as i32);
    let denom = v.sqrt() / bc2.sqrt() + cfg.eps as f64;
    (p - lr / bc1 * m / denom, m, v)
}
