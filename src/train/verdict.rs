//! Whether a run's loss fell enough: a long run must cut it by a quarter, a short one (which
//! has not had the steps to) must only end below where it began.

use super::error::TrainError;
use std::cmp::Ordering;

/// A run of at least [`FULL_FALL_STEPS`] steps must end below this fraction of its first
/// loss.
pub const LOSS_FALL: f64 = 0.75;

/// Runs this long or longer are held to [`LOSS_FALL`]; shorter runs only need the last loss
/// below the first.
pub const FULL_FALL_STEPS: u32 = 20;

/// Judges the loss read back at `first` and at `last`, each `(step, loss)`: the error reports
/// the measured numbers and the bound the run was held to. A run with one reading (one step)
/// passes, as there is nothing to compare.
///
/// ```
/// use ptxkit::train::{judge_loss, TrainError};
/// // Five steps from 3.2 to 3.0: a short run that fell passes.
/// assert!(judge_loss((1, 3.2), (5, 3.0)).is_ok());
/// // Forty steps from 3.2 to 3.0 did not fall by a quarter.
/// assert!(matches!(judge_loss((1, 3.2), (40, 3.0)), Err(TrainError::LossFellTooLittle { .. })));
/// ```
pub fn judge_loss(first: (u32, f64), last: (u32, f64)) -> Result<(), TrainError> {
    let ((first_step, first_loss), (step, last_loss)) = (first, last);
    if step <= first_step {
        // One reading: a single step has nothing to compare with.
        return Ok(());
    }
    // A NaN loss is below nothing, so it fails too.
    let below = |bound: f64| last_loss.partial_cmp(&bound) == Some(Ordering::Less);
    if !below(first_loss) {
        return Err(TrainError::LossDidNotFall {
            first: first_loss,
            first_step,
            last: last_loss,
            step,
        });
    }
    let bound = first_loss * LOSS_FALL;
    if step >= FULL_FALL_STEPS && !below(bound) {
        return Err(TrainError::LossFellTooLittle {
            first: first_loss,
            first_step,
            last: last_loss,
            step,
            bound,
            min_steps: FULL_FALL_STEPS,
        });
    }
    Ok(())
}

/// Judges a fine-tuning run over a frozen base (QLoRA): only its last loss must be below its
/// first, whatever its length, as adapters on a frozen model cannot be held to a fall by a
/// quarter.
///
/// ```
/// use ptxkit::train::judge_fine_tune;
/// assert!(judge_fine_tune((1, 3.2), (300, 3.1)).is_ok());
/// assert!(judge_fine_tune((1, 3.2), (300, 3.3)).is_err());
/// ```
pub fn judge_fine_tune(first: (u32, f64), last: (u32, f64)) -> Result<(), TrainError> {
    let ((first_step, first_loss), (step, last_loss)) = (first, last);
    if step > first_step && last_loss.partial_cmp(&first_loss) != Some(Ordering::Less) {
        return Err(TrainError::LossDidNotFall {
            first: first_loss,
            first_step,
            last: last_loss,
            step,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_passes_when_its_loss_fell_at_all() {
        assert!(judge_loss((1, 3.178), (5, 3.05)).is_ok());
    }

    #[test]
    fn a_short_run_whose_loss_rose_fails_with_the_true_numbers() {
        let e = judge_loss((1, 3.0), (5, 3.1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the loss did not fall: 3.000000 at step 1, 3.100000 at step 5"
        );
    }

    #[test]
    fn a_long_run_must_cut_the_loss_by_a_quarter() {
        assert!(judge_loss((1, 3.0), (40, 2.2)).is_ok());
        let e = judge_loss((1, 3.0), (40, 2.5)).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "the loss fell from 3.000000 at step 1 to 2.500000 at step 40, but a run of 20 or more steps must end below 2.250000"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_single_reading_is_not_judged() {
        assert!(judge_loss((1, 3.0), (1, 3.0)).is_ok());
    }

    #[test]
    fn a_nan_loss_fails() {
        assert!(judge_loss((1, 3.0), (5, f64::NAN)).is_err());
    }
}
