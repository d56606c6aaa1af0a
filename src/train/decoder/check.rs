//! The device's first decoder steps beside the CPU f64 reference.
//!
//! Tolerances, relative. The reference rounds wherever the device does (bf16 around
//! attention, TF32 GEMM inputs), so the differences left are f32 accumulation (unit roundoff
//! 6e-8 over sums of at most a few hundred terms: about 1e-6), roundings that fall on the
//! other side of a boundary because the two sides' values differ in their last bits (each
//! then moves an element by a bf16 or TF32 step, 2⁻⁸ or 2⁻¹⁰ relative), and the attention
//! kernels' own bf16 rounding of the probabilities before they multiply V (and of dS in the
//! backward). Attention reaches the loss only through `o_proj` and the residual stream, so
//! the loss moves by a small fraction of that: [`DECODER_LOSS_TOLERANCE`]. The gradients
//! carry those roundings directly; summed over a tensor they stay under a few 1e-3:
//! [`DECODER_GRAD_TOLERANCE`]. The q and k projections' gradients (and their biases') come
//! only through the scores' gradient dS = P ∘ (dP − rowsum(dO ∘ O)), a difference of
//! near-equal terms while the attention is still nearly uniform, computed from bf16 dO, so
//! the bf16 rounding is a larger share of what is left: up to a few 1e-2 in deeper models
//! after a few steps, hence [`DECODER_SCORE_GRAD_TOLERANCE`]. Each step after the first
//! starts the reference from the device's weights and moments, so every step is compared from
//! one state. AdamW's update depends on the ratio of a gradient to its running magnitude, so it
//! carries the gradients' relative error (a few 1e-3) times the update's share of a weight's
//! norm (`lr·√n / |W|`, about 0.1 for the tiny model's lr of 3e-3): a few 1e-4, hence
//! [`DECODER_WEIGHT_TOLERANCE`]. Tensors that start at zero (the q, k and v biases) are
//! left out of that comparison: after one AdamW step each element is `±lr·|g|/(|g| + ε)`, so
//! their norm counts the gradient elements near ε, and the k bias's gradient (a sum over
//! tokens that nearly cancels) has elements there, set by rounding. Their gradients' norms
//! are compared like every other. A wrong gradient (a missing term, a transposed product, a
//! wrong RoPE layout) moves these by order 1.
//!
//! In bf16 training the reference rounds every value the device stores in bf16 (the GEMMs'
//! inputs, the weights' copies, the logits and their gradient), so the same three sources
//! remain; only the boundary roundings change size. A value whose two sides differ by δ
//! lands across a rounding boundary with probability about δ/step and then moves by a step:
//! the mean shift is δ either way, but its spread over a tensor, √(δ·step), grows with the
//! square root of the step, and bf16's step (2⁻⁸) is four times TF32's (2⁻¹⁰). Every
//! tolerance is therefore twice its TF32 value: [`DECODER_BF16_LOSS_TOLERANCE`],
//! [`DECODER_BF16_GRAD_TOLERANCE`], [`DECODER_BF16_SCORE_GRAD_TOLERANCE`],
//! [`DECODER_BF16_WEIGHT_TOLERANCE`].

use super::config::Precision;
use super::params::Mode;
use super::reference::DecoderReference;
use super::trainer::DecoderTrainer;
use crate::train::{Check, TrainError};

/// Relative tolerance of the loss.
pub const DECODER_LOSS_TOLERANCE: f64 = 1e-3;
/// Relative tolerance of the gradients' norms (global, per tensor, the embedding output's).
pub const DECODER_GRAD_TOLERANCE: f64 = 2e-2;
/// Relative tolerance of the q and k projections' gradient norms (weights and biases).
pub const DECODER_SCORE_GRAD_TOLERANCE: f64 = 6e-2;
/// Relative tolerance of the trained tensors' norms after each update.
pub const DECODER_WEIGHT_TOLERANCE: f64 = 5e-4;

/// Relative tolerance of the loss in bf16 training.
pub const DECODER_BF16_LOSS_TOLERANCE: f64 = 2e-3;
/// Relative tolerance of the gradients' norms in bf16 training.
pub const DECODER_BF16_GRAD_TOLERANCE: f64 = 4e-2;
/// Relative tolerance of the q and k projections' gradient norms in bf16 training.
pub const DECODER_BF16_SCORE_GRAD_TOLERANCE: f64 = 1.2e-1;
/// Relative tolerance of the trained tensors' norms after each update in bf16 training.
pub const DECODER_BF16_WEIGHT_TOLERANCE: f64 = 1e-3;

/// The loss, gradient, score-gradient and weight tolerances of `precision`.
fn tolerances(precision: Precision) -> [f64; 4] {
    match precision {
        Precision::Tf32 => [
            DECODER_LOSS_TOLERANCE,
            DECODER_GRAD_TOLERANCE,
            DECODER_SCORE_GRAD_TOLERANCE,
            DECODER_WEIGHT_TOLERANCE,
        ],
        Precision::Bf16 => [
            DECODER_BF16_LOSS_TOLERANCE,
            DECODER_BF16_GRAD_TOLERANCE,
            DECODER_BF16_SCORE_GRAD_TOLERANCE,
            DECODER_BF16_WEIGHT_TOLERANCE,
        ],
    }
}

/// Takes `steps` steps on `trainer` (which must not have stepped yet; with QLoRA, in bf16) and
/// on the reference in lockstep, the reference starting each step after the first from the
/// device's weights and moments (see [`DecoderReference::sync`]); returns every comparison:
/// per step the loss, the global gradient norm, the embedding output's gradient norm, each
/// trained tensor's gradient norm and (unless it started at zero) its norm after the update.
pub fn compare_decoder_with_reference(
    trainer: &mut DecoderTrainer,
    steps: u32,
) -> Result<Vec<Check>, TrainError> {
    let start = match trainer.config().mode {
        Mode::Full => trainer.initial().clone(),
        Mode::QLora { .. } => {
            let mut all = trainer.decoded_base()?;
            all.extend(trainer.initial().clone());
            all
        }
    };
    let mut reference = DecoderReference::new(trainer.config(), &start)?;
    let [loss_tol, grad_tol, score_tol, weight_tol] = tolerances(trainer.config().precision);
    let mut checks = Vec::new();
    for step in 1..=steps {
        if step > 1 {
            let (m, v) = trainer.moments()?;
            reference.sync(&trainer.trained()?, &m, &v);
        }
        let batch = trainer.batch(trainer.steps_done() + 1);
        trainer.step()?;
        let want = reference.step(&batch);
        let mut add = |quantity: String, device: f64, reference: f64, tolerance: f64| {
            checks.push(Check {
                step,
                quantity,
                device,
                reference,
                tolerance,
            })
        };
        add("loss".into(), trainer.loss()? as f64, want.loss, loss_tol);
        let (grad_norm, _) = trainer.grad_norm_and_scale()?;
        add(
            "grad norm".into(),
            grad_norm as f64,
            want.grad_norm,
            grad_tol,
        );
        add(
            "embedding output grad norm".into(),
            trainer.embedding_grad_norm()?,
            want.embedding_grad_norm,
            grad_tol,
        );
        let grads = trainer.gradients()?;
        for (name, reference) in &want.grad_norms {
            let device = grads.get(name).map_or(f64::NAN, |t| norm(&t.data));
            let scores = [".q_proj.", ".k_proj."].iter().any(|p| name.contains(p));
            let tolerance = if scores { score_tol } else { grad_tol };
            add(format!("|d {name}|"), device, *reference, tolerance);
        }
        let weights = trainer.trained()?;
        let starts_at_zero = |name: &str| {
            trainer
                .initial()
                .get(name)
                .is_some_and(|t| t.data.iter().all(|&x| x == 0.0))
        };
        for (name, reference) in reference.weight_norms() {
            if starts_at_zero(&name) {
                continue;
            }
            let device = weights.get(&name).map_or(f64::NAN, |t| norm(&t.data));
            add(
                format!("|{name}| after update"),
                device,
                reference,
                weight_tol,
            );
        }
    }
    Ok(checks)
}

fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt()
}
