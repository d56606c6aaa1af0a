//! A data-parallel run: one thread per GPU in this process, each a [`Trainer::for_rank`] on
//! its shard of the batch, the gradient all-reduce inside each captured step; at the end the
//! ranks' weights are compared bit for bit.

use super::config::TrainConfig;
use super::error::TrainError;
use super::problem::Problem;
use super::trainer::{Launch, Trainer};
use kernel_runtime::{Communicator, Device};
use std::time::{Duration, Instant};

/// How long a rank waits for its peers' share of a step before it aborts the communicator and
/// fails (a dead or hung peer), rather than hanging.
pub const RANK_TIMEOUT: Duration = Duration::from_secs(120);

/// What a data-parallel run measured.
#[derive(Clone, Debug)]
pub struct ParallelSummary {
    /// How many ranks (GPUs) trained.
    pub ranks: usize,
    /// `(step, loss)`: the loss over the whole batch (the ranks' shard means averaged), for
    /// every step up to `check_steps` and every `log_every` after.
    pub losses: Vec<(u32, f64)>,
    /// Wall time of the steps after `check_steps`, as rank 0 saw it.
    pub seconds: f64,
    /// Steps timed in `seconds`.
    pub timed_steps: u32,
}

/// One rank's results, handed back to the caller's thread.
struct RankResult {
    losses: Vec<(u32, f64)>,
    seconds: f64,
    weight_bits: Vec<u32>,
}

/// Trains `cfg` data-parallel over `devices` (one rank each; `cfg.shape.tokens` is the global
/// batch and must split evenly), checks that the loss fell and that every rank ends with
/// bit-identical weights. The emulator runs it with one device.
///
/// ```
/// use kernel_runtime::Device;
/// use ptxkit::train::{run_data_parallel, Launch, TrainConfig, TrainError};
/// // 16 tokens do not split over three ranks: refused before any communicator exists.
/// let devices = [Device::emulator(), Device::emulator(), Device::emulator()];
/// let err = run_data_parallel(&devices, &TrainConfig::small(), Launch::Graph, &mut |_| {});
/// assert!(matches!(err, Err(TrainError::Config(_))));
/// ```
pub fn run_data_parallel(
    devices: &[Device],
    cfg: &TrainConfig,
    launch: Launch,
    log: &mut dyn FnMut(&str),
) -> Result<ParallelSummary, TrainError> {
    cfg.validate()?;
    let ranks = devices.len();
    // Refuse an uneven split before any communicator exists.
    Problem::new(cfg.shape, cfg.seed).shard(0, ranks)?;
    log(&format!(
        "data parallel over {ranks} ranks: {} tokens each of a global batch of {}",
        cfg.shape.tokens / ranks,
        cfg.shape.tokens
    ));
    let comms = Communicator::per_device(devices)?;
    let results: Vec<Result<RankResult, TrainError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| scope.spawn(move || train_rank(comm, cfg, launch)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(TrainError::Config("a rank's thread panicked".into())))
            })
            .collect()
    });
    let results = first_error(results)?;
    let first = &results[0];
    for (rank, other) in results.iter().enumerate().skip(1) {
        if let Some(index) = first_difference(&first.weight_bits, &other.weight_bits) {
            return Err(TrainError::RanksDiverged { rank, index });
        }
    }
    log(&format!("weights bit-identical on all {ranks} ranks"));
    for &(step, loss) in &first.losses {
        log(&format!("step {step:>5}  loss {loss:.6}"));
    }
    let timed_steps = cfg.steps - cfg.check_steps.min(cfg.steps);
    if timed_steps > 0 {
        log(&format!(
            "{timed_steps} steps in {:.3} s ({:.3} ms/step on {ranks} ranks)",
            first.seconds,
            first.seconds * 1e3 / timed_steps as f64
        ));
    }
    check_fall(&first.losses)?;
    Ok(ParallelSummary {
        ranks,
        losses: first.losses.clone(),
        seconds: first.seconds,
        timed_steps,
    })
}

/// One rank: build, step, read the loss where asked (after a wait with a deadline), and hand
/// back the final weights.
fn train_rank(
    comm: Communicator,
    cfg: &TrainConfig,
    launch: Launch,
) -> Result<RankResult, TrainError> {
    let mut trainer = Trainer::for_rank(comm, cfg, launch)?;
    let check_steps = cfg.check_steps.min(cfg.steps);
    let mut losses = Vec::new();
    let mut start = Instant::now();
    let rank = trainer.rank();
    while trainer.steps_done() < cfg.steps {
        trainer.step()?;
        let step = trainer.steps_done();
        tracing::trace!(target: "ptxkit::train", rank, step, "step queued");
        if step <= check_steps || step.is_multiple_of(cfg.log_every) || step == cfg.steps {
            trainer.wait(RANK_TIMEOUT)?;
            tracing::debug!(target: "ptxkit::train", rank, step, "step done");
            let loss = trainer.loss()? as f64;
            if !loss.is_finite() {
                return Err(TrainError::NonFiniteLoss { step, loss });
            }
            losses.push((step, loss));
        }
        if step == check_steps {
            start = Instant::now();
        }
    }
    trainer.wait(RANK_TIMEOUT)?;
    Ok(RankResult {
        losses,
        seconds: start.elapsed().as_secs_f64(),
        weight_bits: trainer.weight_bits()?,
    })
}

/// Every rank's result, or the most telling error: a rank's own failure before the timeouts
/// it caused in its peers.
pub(crate) fn first_error<R>(results: Vec<Result<R, TrainError>>) -> Result<Vec<R>, TrainError> {
    let is_timeout = |e: &TrainError| {
        matches!(
            e,
            TrainError::Runtime(kernel_runtime::Error::CollectiveTimeout { .. })
        )
    };
    let mut errors: Vec<TrainError> = Vec::new();
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(v) => ok.push(v),
            Err(e) => errors.push(e),
        }
    }
    if let Some(pos) = errors.iter().position(|e| !is_timeout(e)) {
        return Err(errors.swap_remove(pos));
    }
    match errors.pop() {
        Some(e) => Err(e),
        None => Ok(ok),
    }
}

pub(crate) fn first_difference(a: &[u32], b: &[u32]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

fn check_fall(losses: &[(u32, f64)]) -> Result<(), TrainError> {
    match (losses.first(), losses.last()) {
        (Some(&first), Some(&last)) => super::verdict::judge_loss(first, last),
        _ => Err(TrainError::Config("no loss was read back".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn first_difference_finds_the_first_unequal_bit_pattern() {
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 3]), None);
        assert_eq!(first_difference(&[1, 2, 3], &[1, 5, 3]), Some(1));
        assert_eq!(first_difference(&[1, 2], &[1, 2, 3]), Some(2));
    }
}
