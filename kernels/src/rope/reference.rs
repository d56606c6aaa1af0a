//! CPU references for RoPE, in f64.

use super::{Rope, RopeLayout};

/// Rotates `x` (`tokens × heads × head_dim`) by `sign · angle`.
fn rotate_all(
    x: &[f32],
    positions: &[u32],
    heads: usize,
    head_dim: usize,
    rope: Rope,
    sign: f64,
) -> Vec<f64> {
    let mut y: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let half = rope.rotary_dim / 2;
    for (t, &pos) in positions.iter().enumerate() {
        for h in 0..heads {
            let base = (t * heads + h) * head_dim;
            for i in 0..half {
                let inv_freq = (rope.theta as f64).powf(-((2 * i) as f64) / rope.rotary_dim as f64);
                let angle = pos as f64 * inv_freq;
                let (sin, cos) = (sign * angle.sin(), angle.cos());
                let (a, b) = match rope.layout {
                    RopeLayout::NeoX => (base + i, base + i + half),
                    RopeLayout::Interleaved => (base + 2 * i, base + 2 * i + 1),
                };
                let (x0, x1) = (x[a] as f64, x[b] as f64);
                y[a] = x0 * cos - x1 * sin;
                y[b] = x1 * cos + x0 * sin;
            }
        }
    }
    y
}

/// `y = rope(x)`: each token's heads rotated by its position.
///
/// ```
/// use kernels::rope::{reference, Rope, RopeLayout};
/// let rope = Rope { layout: RopeLayout::Interleaved, theta: 10000.0, rotary_dim: 2 };
/// let y = reference::rope(&[1.0, 0.0, 5.0], &[1], 1, 3, rope);
/// assert!((y[0] - 1f64.cos()).abs() < 1e-12 && (y[1] - 1f64.sin()).abs() < 1e-12);
/// assert_eq!(y[2], 5.0);
/// ```
pub fn rope(x: &[f32], positions: &[u32], heads: usize, head_dim: usize, rope: Rope) -> Vec<f64> {
    rotate_all(x, positions, heads, head_dim, rope, 1.0)
}

/// `dx` from `dy`: the rotation is orthogonal, so its gradient rotates back by `−angle`.
///
/// ```
/// use kernels::rope::{reference, Rope, RopeLayout};
/// let rope = Rope { layout: RopeLayout::NeoX, theta: 10000.0, rotary_dim: 2 };
/// let y = reference::rope(&[0.3, -0.7], &[5], 1, 2, rope);
/// let y32: Vec<f32> = y.iter().map(|&v| v as f32).collect();
/// let x = reference::rope_backward(&y32, &[5], 1, 2, rope);
/// assert!((x[0] - 0.3).abs() < 1e-6 && (x[1] + 0.7).abs() < 1e-6);
/// ```
pub fn rope_backward(
    dy: &[f32],
    positions: &[u32],
    heads: usize,
    head_dim: usize,
    rope: Rope,
) -> Vec<f64> {
    rotate_all(dy, positions, heads, head_dim, rope, -1.0)
}
