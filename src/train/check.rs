//! The device's first steps beside the CPU f64 reference.
//!
//! Tolerances, relative: the device computes in f32 (unit roundoff u = 2⁻²⁴ ≈ 6e-8) with
//! sums of up to `tokens` (4096) terms in the weight gradients and `ffn` (1408) in the
//! forward; rounding errors of such sums grow like √k·u ≈ 4e-6 typically and k·u ≈ 2.4e-4 in
//! the worst case. The loss and the gradient norms are averages over many such sums, so their
//! errors stay near 1e-6; 1e-4 leaves a wide margin and still catches any real mistake (a
//! wrong gradient or update moves them by 1e-3 or more). The weights' norms are dominated by
//! the exact initial values and move by about `lr` per element per step; f32 rounding of the
//! update changes them by about 1e-7, hence 1e-5.

use super::error::TrainError;
use super::params::Tensor;
use super::reference::Reference;
use super::trainer::Trainer;

/// Relative tolerance of the loss and the gradient norms.
pub const LOSS_TOLERANCE: f64 = 1e-4;
/// Relative tolerance of the weights' norms after each update.
pub const WEIGHT_TOLERANCE: f64 = 1e-5;

/// One compared quantity.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub step: u32,
    pub quantity: String,
    pub device: f64,
    pub reference: f64,
    pub tolerance: f64,
}

impl Check {
    /// `|device − reference| / |reference|` (infinite where the device's value is not finite).
    ///
    /// ```
    /// let c = ptxkit::train::Check {
    ///     step: 1, quantity: "loss".into(), device: 1.0001, reference: 1.0, tolerance: 1e-4,
    /// };
    /// assert!((c.rel_error() - 1e-4).abs() < 1e-12);
    /// ```
    pub fn rel_error(&self) -> f64 {
        let e = (self.device - self.reference).abs() / self.reference.abs().max(f64::MIN_POSITIVE);
        if e.is_nan() {
            f64::INFINITY
        } else {
            e
        }
    }

    pub fn passed(&self) -> bool {
        self.rel_error() <= self.tolerance
    }

    /// The error a failed check turns into.
    pub fn to_error(&self) -> TrainError {
        TrainError::ReferenceMismatch {
            step: self.step,
            quantity: self.quantity.clone(),
            got: self.device,
            want: self.reference,
            rel_error: self.rel_error(),
            tolerance: self.tolerance,
        }
    }
}

/// Takes `steps` steps on `trainer` (which must not have stepped yet) and on the reference in
/// lockstep; returns every comparison: per step the loss, the gradient norm, the input
/// gradient's norm and each weight's norm after the update.
///
/// ```
/// use ptxkit::train::{compare_with_reference, Launch, Trainer, TrainConfig};
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let device = kernel_runtime::Device::emulator();
/// let mut trainer = Trainer::new(&device, &TrainConfig::small(), Launch::Graph)?;
/// let checks = compare_with_reference(&mut trainer, 1)?;
/// assert!(checks.iter().all(|c| c.passed()));
/// # Ok(()) }
/// ```
pub fn compare_with_reference(trainer: &mut Trainer, steps: u32) -> Result<Vec<Check>, TrainError> {
    let mut reference = Reference::new(trainer.config(), trainer.problem());
    let mut checks = Vec::new();
    for step in 1..=steps {
        trainer.step()?;
        let want = reference.step();
        let (grad_norm, _) = trainer.grad_norm_and_scale()?;
        let mut add = |quantity: String, device: f64, reference: f64, tolerance: f64| {
            checks.push(Check {
                step,
                quantity,
                device,
                reference,
                tolerance,
            })
        };
        add(
            "loss".into(),
            trainer.loss()? as f64,
            want.loss,
            LOSS_TOLERANCE,
        );
        add(
            "grad norm".into(),
            grad_norm as f64,
            want.grad_norm,
            LOSS_TOLERANCE,
        );
        add(
            "input grad norm".into(),
            trainer.input_grad_norm()?,
            want.dx_norm,
            LOSS_TOLERANCE,
        );
        let norms = trainer.weight_norms()?;
        for (t, (&got, want)) in Tensor::ALL
            .iter()
            .zip(norms.iter().zip(reference.weight_norms()))
        {
            add(
                format!("|{}| after update", t.name()),
                got,
                want,
                WEIGHT_TOLERANCE,
            );
        }
    }
    Ok(checks)
}
