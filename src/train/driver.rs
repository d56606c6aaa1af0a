//! A whole training run: the reference check of the first steps, then the remaining steps
//! with the loss read back every few steps, and the verdict.

use super::check::{compare_with_reference, Check};
use super::config::TrainConfig;
use super::error::TrainError;
use super::observer::{Lines, Observer, Progress};
use super::trainer::{Launch, Trainer};
use super::verdict::judge_loss;
#[cfg(doc)]
use super::verdict::LOSS_FALL;
use kernel_runtime::Device;
use std::time::Instant;

/// What a successful run measured.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The reference comparisons of the first steps.
    pub checks: Vec<Check>,
    /// `(step, loss)` for every step whose loss was read back.
    pub losses: Vec<(u32, f64)>,
    /// Wall time of the steps after the reference check, and how many there were.
    pub seconds: f64,
    pub timed_steps: u32,
    /// Launches per step in the captured graph, with [`Launch::Graph`].
    pub graph_launches: Option<usize>,
}

/// Trains `cfg` on `device`, reporting through `log` as it goes (one line per call): the
/// setup, every reference comparison, and the loss every `cfg.log_every` steps. Fails when a
/// comparison misses its tolerance, when the loss is not finite, or when it did not fall as
/// [`judge_loss`] requires (below the first loss; below [`LOSS_FALL`] of it for a long run).
///
/// ```
/// use ptxkit::train::{run, Launch, TrainConfig};
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let cfg = TrainConfig { steps: 12, ..TrainConfig::small() };
/// let summary = run(&kernel_runtime::Device::emulator(), &cfg, Launch::Graph, &mut |_| {})?;
/// assert!(summary.checks.iter().all(|c| c.passed()));
/// # Ok(()) }
/// ```
pub fn run(
    device: &Device,
    cfg: &TrainConfig,
    launch: Launch,
    log: &mut dyn FnMut(&str),
) -> Result<Summary, TrainError> {
    run_observed(device, cfg, launch, &mut Lines(log))
}

/// [`run`], reporting its lines and its progress (the pre-warm, then each step) to
/// `observer`; the example is on [`Observer`].
pub fn run_observed(
    device: &Device,
    cfg: &TrainConfig,
    launch: Launch,
    observer: &mut dyn Observer,
) -> Result<Summary, TrainError> {
    cfg.validate()?;
    let s = cfg.shape;
    let params: usize = super::Tensor::ALL.iter().map(|t| t.len(&s)).sum();
    observer.line(&format!(
        "block: {s}; {params} parameters; AdamW lr {:e}, weight decay {}, clip at norm {}",
        cfg.adamw.lr, cfg.adamw.weight_decay, cfg.max_norm
    ));
    observer.progress(Progress::Prewarm);
    let mut trainer = Trainer::new(device, cfg, launch)?;
    match trainer.graph_launches() {
        Some(n) => observer.line(&format!(
            "step: {n} launches, captured once as a graph and replayed every step"
        )),
        None => observer.line("step: launched directly every step"),
    }

    let check_steps = cfg.check_steps.min(cfg.steps);
    observer.line(&format!(
        "first {check_steps} steps against the CPU f64 reference:"
    ));
    observer.line(&format!(
        "{:>5}  {:<22} {:>16} {:>16} {:>10} {:>9}",
        "step", "quantity", "device", "reference", "rel error", "tolerance"
    ));
    let checks = compare_with_reference(&mut trainer, check_steps)?;
    observer.progress(Progress::Steps {
        done: check_steps,
        total: cfg.steps,
    });
    let mut losses = Vec::new();
    for c in &checks {
        observer.line(&format!(
            "{:>5}  {:<22} {:>16.9} {:>16.9} {:>10.2e} {:>9.0e}{}",
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

    observer.line("training:");
    for &(step, loss) in &losses {
        observer.line(&format!("step {step:>5}  loss {loss:.6}"));
    }
    let start = Instant::now();
    while trainer.steps_done() < cfg.steps {
        trainer.step()?;
        let step = trainer.steps_done();
        observer.progress(Progress::Steps {
            done: step,
            total: cfg.steps,
        });
        if step % cfg.log_every == 0 || step == cfg.steps {
            let loss = trainer.loss()? as f64;
            if !loss.is_finite() {
                return Err(TrainError::NonFiniteLoss { step, loss });
            }
            observer.line(&format!("step {step:>5}  loss {loss:.6}"));
            losses.push((step, loss));
        }
    }
    trainer.synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    let timed_steps = cfg.steps - check_steps;
    if timed_steps > 0 {
        observer.line(&format!(
            "{timed_steps} steps in {seconds:.3} s ({:.3} ms/step, loss read back every {} steps)",
            seconds * 1e3 / timed_steps as f64,
            cfg.log_every
        ));
    }

    let (first, last) = match (losses.first(), losses.last()) {
        (Some(&first), Some(&last)) => (first, last),
        _ => return Err(TrainError::Config("no loss was read back".into())),
    };
    judge_loss(first, last)?;
    let ((first_step, first), (step, last)) = (first, last);
    observer.line(&format!(
        "loss fell from {first:.6} at step {first_step} to {last:.6} at step {step}"
    ));
    Ok(Summary {
        checks,
        losses,
        seconds,
        timed_steps,
        graph_launches: trainer.graph_launches(),
    })
}
