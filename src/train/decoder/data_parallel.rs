//! A data-parallel decoder run: one thread per GPU in this process, each a
//! [`DecoderTrainer::for_rank`] on its windows of every step's batch, the gradient all-reduce
//! inside each captured step; at the end the ranks' weights are compared bit for bit.

use super::config::DecoderConfig;
use super::corpus::Corpus;
use super::params::Mode;
use super::trainer::DecoderTrainer;
use crate::train::data_parallel::{first_difference, first_error, RANK_TIMEOUT};
use crate::train::verdict::{judge_fine_tune, judge_loss};
use crate::train::{Launch, TrainError};
use kernel_runtime::{Communicator, Device};
use std::time::Instant;

/// What one rank measured.
struct RankResult {
    losses: Vec<(u32, f64)>,
    seconds: f64,
    weight_bits: Vec<u32>,
}

/// Trains `cfg` data-parallel over `devices`, each rank on `cfg.seqs` windows of a step's
/// `cfg.seqs × devices.len()`, reporting through `log`; returns `(step, loss)` of rank 0 at
/// every read-back. Fails when a rank fails, when the ranks' weights differ at the end, or
/// when the loss did not fall.
///
/// ```
/// use ptxkit::train::decoder::{run_decoder_data_parallel, Corpus, DecoderConfig};
/// use ptxkit::train::Launch;
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let devices = [kernel_runtime::Device::emulator()];
/// let cfg = DecoderConfig { seqs: 1, steps: 2, log_every: 1, ..DecoderConfig::tiny() };
/// // A text of its own, so that edits to the built-in corpus's documents leave this run as is.
/// let text = "Each thread reads its inputs, works in registers and writes its outputs. ".repeat(24);
/// let corpus = Corpus::from_bytes(text.as_bytes());
/// let losses = run_decoder_data_parallel(&devices, &cfg, &corpus, Launch::Graph, &mut |_| {})?;
/// assert_eq!(losses.len(), 2);
/// # Ok(()) }
/// ```
pub fn run_decoder_data_parallel(
    devices: &[Device],
    cfg: &DecoderConfig,
    corpus: &Corpus,
    launch: Launch,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<(u32, f64)>, TrainError> {
    cfg.validate()?;
    let ranks = devices.len();
    log(&format!(
        "data parallel over {ranks} ranks: {} windows of {} tokens each, {} per step",
        cfg.seqs,
        cfg.seq_len,
        cfg.seqs * ranks
    ));
    let comms = if ranks == 1 {
        vec![Communicator::single(&devices[0])?]
    } else {
        Communicator::per_device(devices)?
    };
    let results: Vec<Result<RankResult, TrainError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| scope.spawn(move || train_rank(comm, cfg, corpus.clone(), launch)))
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
    let tokens = (cfg.tokens() * ranks) as f64 * f64::from(cfg.steps);
    log(&format!(
        "{} steps in {:.3} s ({:.0} tokens/s over {ranks} ranks)",
        cfg.steps,
        first.seconds,
        tokens / first.seconds.max(1e-9)
    ));
    if let (Some(&a), Some(&b)) = (first.losses.first(), first.losses.last()) {
        match cfg.mode {
            Mode::Full => judge_loss(a, b)?,
            Mode::QLora { .. } => judge_fine_tune(a, b)?,
        }
    }
    Ok(first.losses.clone())
}

fn train_rank(
    comm: Communicator,
    cfg: &DecoderConfig,
    corpus: Corpus,
    launch: Launch,
) -> Result<RankResult, TrainError> {
    let mut trainer = DecoderTrainer::for_rank(comm, cfg, corpus, launch)?;
    let mut losses = Vec::new();
    let start = Instant::now();
    while trainer.steps_done() < cfg.steps {
        trainer.step()?;
        let step = trainer.steps_done();
        if step == 1 || step.is_multiple_of(cfg.log_every) || step == cfg.steps {
            trainer.wait(RANK_TIMEOUT)?;
            let loss = trainer.loss()? as f64;
            if !loss.is_finite() {
                return Err(TrainError::NonFiniteLoss { step, loss });
            }
            losses.push((step, loss));
        }
    }
    trainer.wait(RANK_TIMEOUT)?;
    Ok(RankResult {
        losses,
        seconds: start.elapsed().as_secs_f64(),
        weight_bits: trainer.weight_bits()?,
    })
}
