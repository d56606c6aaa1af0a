//! A whole decoder run: the reference check of the first steps, the remaining steps with the
//! loss and throughput read back every few steps, checkpoints, and the verdict.

use super::check::compare_decoder_with_reference;
use super::config::{DecoderConfig, Precision};
use super::corpus::Corpus;
use super::params::Mode;
use super::trainer::DecoderTrainer;
use crate::train::observer::{Observer, Progress};
use crate::train::verdict::{judge_fine_tune, judge_loss};
use crate::train::{Check, Launch, TrainError};
use kernel_runtime::Device;
use std::path::PathBuf;
use std::time::Instant;

/// Where a run starts and where it writes checkpoints.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Continue the run checkpointed in this directory.
    pub resume: Option<PathBuf>,
    /// Start from the model checkpointed in this directory (with fresh optimizer state).
    pub base: Option<PathBuf>,
    /// Write checkpoints into this directory, every `checkpoint_every` steps and at the end.
    pub checkpoint: Option<PathBuf>,
    /// 0: only at the end.
    pub checkpoint_every: u32,
}

/// What a successful decoder run measured.
#[derive(Clone, Debug)]
pub struct DecoderSummary {
    /// The reference comparisons of the first steps.
    pub checks: Vec<Check>,
    /// `(step, loss)` for every step whose loss was read back.
    pub losses: Vec<(u32, f64)>,
    /// Wall time of the steps after the reference check, and how many there were.
    pub seconds: f64,
    pub timed_steps: u32,
    /// Tokens trained per second over the timed steps.
    pub tokens_per_second: f64,
    /// Launches per step in the captured graph, with [`Launch::Graph`].
    pub graph_launches: Option<usize>,
}

/// Trains the decoder of `cfg` on `corpus`, reporting to `observer` as it goes. Fails when a
/// reference comparison misses its tolerance, when the loss is not finite, when it did not
/// fall as [`judge_loss`] requires (QLoRA: [`judge_fine_tune`]), or when a frozen tensor
/// changed. A resumed run skips the reference check (the
/// reference starts from fresh moments).
///
/// ```
/// use ptxkit::train::decoder::{run_decoder, Corpus, DecoderConfig, RunOptions};
/// use ptxkit::train::Launch;
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let cfg = DecoderConfig { seqs: 1, steps: 3, check_steps: 1, ..DecoderConfig::tiny() };
/// let device = kernel_runtime::Device::emulator();
/// struct Quiet;
/// impl ptxkit::train::Observer for Quiet {
///     fn line(&mut self, _line: &str) {}
/// }
/// let options = RunOptions::default();
/// let summary = run_decoder(&device, &cfg, Corpus::builtin(), Launch::Graph, &options, &mut Quiet)?;
/// assert!(summary.checks.iter().all(|c| c.passed()));
/// # Ok(()) }
/// ```
pub fn run_decoder(
    device: &Device,
    cfg: &DecoderConfig,
    corpus: Corpus,
    launch: Launch,
    options: &RunOptions,
    observer: &mut dyn Observer,
) -> Result<DecoderSummary, TrainError> {
    cfg.validate()?;
    observer.progress(Progress::Prewarm);
    let mut trainer = match (&options.resume, &options.base) {
        (Some(dir), _) => DecoderTrainer::resume(device, cfg, corpus, launch, dir)?,
        (None, Some(dir)) => DecoderTrainer::from_base(device, cfg, corpus, launch, dir)?,
        (None, None) => DecoderTrainer::new(device, cfg, corpus, launch)?,
    };
    let cfg = *trainer.config();
    let m = cfg.model;
    let what = match cfg.mode {
        Mode::Full => format!("{} parameters trained", m.parameter_count()),
        Mode::QLora { rank, alpha } => format!(
            "QLoRA: the {} base parameters frozen (projections in NF4), adapters of rank {rank} (alpha {alpha}) on q, k, v, o, gate, up, down",
            m.parameter_count()
        ),
    };
    observer.line(&format!(
        "decoder: {} layers, hidden {}, {} query / {} kv heads of {}, ffn {}, vocab {}; {what}",
        m.layers, m.hidden, m.heads_q, m.heads_kv, m.head_dim, m.ffn, m.vocab
    ));
    observer.line(&format!(
        "batch: {} windows of {} tokens per step; AdamW lr {:e}, weight decay {}, clip at norm {}",
        cfg.seqs, cfg.seq_len, cfg.adamw.lr, cfg.adamw.weight_decay, cfg.max_norm
    ));
    observer.line(&match cfg.precision {
        Precision::Bf16 => "precision: bf16 GEMMs on bf16 weight copies and activations; f32 master weights, AdamW, residual stream and loss".to_string(),
        Precision::Tf32 => "precision: TF32 GEMMs on f32 weights and activations".to_string(),
    });
    match trainer.graph_launches() {
        Some(n) => observer.line(&format!(
            "step: {n} launches, captured once as a graph and replayed every step"
        )),
        None => observer.line("step: launched directly every step"),
    }
    let start_step = trainer.steps_done();
    if start_step > 0 {
        observer.line(&format!("resumed at step {start_step}"));
    }
    let check_steps = if start_step == 0 && cfg.mode == Mode::Full {
        cfg.check_steps.min(cfg.steps)
    } else {
        0
    };
    let mut losses = Vec::new();
    let checks = if check_steps > 0 {
        observer.line(&format!(
            "first {check_steps} steps against the CPU f64 reference:"
        ));
        observer.line(&format!(
            "{:>5}  {:<52} {:>14} {:>14} {:>9} {:>6}",
            "step", "quantity", "device", "reference", "rel error", "tol"
        ));
        let checks = compare_decoder_with_reference(&mut trainer, check_steps)?;
        for c in &checks {
            observer.line(&format!(
                "{:>5}  {:<52} {:>14.7} {:>14.7} {:>9.2e} {:>6.0e}{}",
                c.step,
                c.quantity,
                c.device,
                c.reference,
                c.rel_error(),
                c.tolerance,
                if c.passed() { "" } else { "  MISMATCH" }
            ));
            if c.quantity == "loss" {
                losses.push((c.step, c.device));
            }
        }
        if let Some(bad) = checks.iter().find(|c| !c.passed()) {
            return Err(bad.to_error());
        }
        observer.progress(Progress::Steps {
            done: check_steps,
            total: cfg.steps,
        });
        checks
    } else {
        Vec::new()
    };

    observer.line("training:");
    for &(step, loss) in &losses {
        observer.line(&format!("step {step:>5}  loss {loss:.6}"));
    }
    let tokens = cfg.tokens() as f64;
    let start = Instant::now();
    let (mut mark, mut mark_step) = (start, trainer.steps_done());
    while trainer.steps_done() < cfg.steps {
        trainer.step()?;
        let step = trainer.steps_done();
        observer.progress(Progress::Steps {
            done: step,
            total: cfg.steps,
        });
        let first_read = losses.is_empty();
        if first_read || step % cfg.log_every == 0 || step == cfg.steps {
            let loss = trainer.loss()? as f64;
            if !loss.is_finite() {
                return Err(TrainError::NonFiniteLoss { step, loss });
            }
            let now = Instant::now();
            let rate = tokens * f64::from(step - mark_step) / (now - mark).as_secs_f64();
            (mark, mark_step) = (now, step);
            observer.line(&format!(
                "step {step:>5}  loss {loss:.6}  {rate:>10.0} tokens/s"
            ));
            losses.push((step, loss));
        }
        if let Some(dir) = &options.checkpoint {
            let every = options.checkpoint_every;
            if every > 0 && step % every == 0 && step != cfg.steps {
                trainer.save(dir)?;
                observer.line(&format!("checkpoint at step {step}: {}", dir.display()));
            }
        }
    }
    trainer.synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    let timed_steps = cfg.steps.saturating_sub(start_step + check_steps);
    let tokens_per_second = tokens * f64::from(timed_steps) / seconds.max(1e-9);
    if timed_steps > 0 {
        observer.line(&format!(
            "{timed_steps} steps in {seconds:.3} s ({:.3} ms/step, {tokens_per_second:.0} tokens/s)",
            seconds * 1e3 / f64::from(timed_steps),
        ));
    }
    // The last checkpoint is written after the timed loop, since the reference check may have
    // taken every step of a short run.
    if let Some(dir) = &options.checkpoint {
        trainer.save(dir)?;
        let step = trainer.steps_done();
        observer.line(&format!("checkpoint at step {step}: {}", dir.display()));
    }
    if cfg.mode != Mode::Full {
        let changed = trainer.changed_frozen()?;
        if let Some(what) = changed.first() {
            return Err(TrainError::FrozenBaseChanged { what: what.clone() });
        }
        observer.line("the frozen base is unchanged");
    }
    let (first, last) = match (losses.first(), losses.last()) {
        (Some(&first), Some(&last)) => (first, last),
        _ => return Err(TrainError::Config("no loss was read back".into())),
    };
    match cfg.mode {
        Mode::Full => judge_loss(first, last)?,
        Mode::QLora { .. } => judge_fine_tune(first, last)?,
    }
    let ((first_step, first), (step, last)) = (first, last);
    observer.line(&format!(
        "loss fell from {first:.6} at step {first_step} to {last:.6} at step {step}"
    ));
    Ok(DecoderSummary {
        checks,
        losses,
        seconds,
        timed_steps,
        tokens_per_second,
        graph_launches: trainer.graph_launches(),
    })
}
