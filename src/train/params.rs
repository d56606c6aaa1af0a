//! The trained tensors: their order in the optimizer's flat layout, their lengths and which
//! get weight decay, and the host-side views of a flat buffer.

use super::config::Shape;
use kernels::optim::ParamLayout;

/// One trained tensor. The block is `h = x + W_down · (silu(W_gate · n) ⊙ (W_up · n))` with
/// `n = rms_norm(x, γ)`, and the classifier `logits = h · W_outᵀ`; weights are stored
/// row-major as `out × in`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tensor {
    /// γ of the RMSNorm, `hidden` (no weight decay).
    Gamma,
    /// `ffn × hidden`.
    WGate,
    /// `ffn × hidden`.
    WUp,
    /// `hidden × ffn`.
    WDown,
    /// `classes × hidden`.
    WOut,
}

impl Tensor {
    /// Every tensor, in layout order.
    pub const ALL: [Tensor; 5] = [
        Tensor::Gamma,
        Tensor::WGate,
        Tensor::WUp,
        Tensor::WDown,
        Tensor::WOut,
    ];

    /// Position in [`Tensor::ALL`] and in the flat layout.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Tensor::Gamma => "gamma",
            Tensor::WGate => "W_gate",
            Tensor::WUp => "W_up",
            Tensor::WDown => "W_down",
            Tensor::WOut => "W_out",
        }
    }

    /// Elements for `shape`.
    ///
    /// ```
    /// use ptxkit::train::{Shape, Tensor};
    /// assert_eq!(Tensor::WDown.len(&Shape::SMALL), 32 * 64);
    /// ```
    pub fn len(self, shape: &Shape) -> usize {
        match self {
            Tensor::Gamma => shape.hidden,
            Tensor::WGate | Tensor::WUp | Tensor::WDown => shape.ffn * shape.hidden,
            Tensor::WOut => shape.classes * shape.hidden,
        }
    }

    /// Whether AdamW decays it (the matrices, not γ).
    pub fn decay(self) -> bool {
        self != Tensor::Gamma
    }
}

/// `tensors` (in [`Tensor::ALL`] order) placed in a flat buffer of `layout`, padding zero.
pub fn flatten(layout: &ParamLayout, tensors: &[Vec<f32>]) -> Vec<f32> {
    let mut flat = vec![0.0; layout.total()];
    for (i, t) in tensors.iter().enumerate() {
        if let Some(range) = layout.range(i) {
            flat[range].copy_from_slice(t);
        }
    }
    flat
}

/// The L2 norm of each tensor of a flat buffer, in f64.
pub fn norms(layout: &ParamLayout, flat: &[f32]) -> Vec<f64> {
    (0..layout.tensors())
        .map(|i| {
            let range = layout.range(i).unwrap_or(0..0);
            flat[range]
                .iter()
                .map(|&v| v as f64 * v as f64)
                .sum::<f64>()
                .sqrt()
        })
        .collect()
}
