//! One decoder step written out for an outside check (`scripts/crosscheck_hf.py` runs it
//! through Hugging Face transformers): the checkpoint the step starts from, and
//! `step.safetensors` with the batch's tokens and targets, the logits, the loss and the
//! gradient of every trained tensor, and in its metadata the mode and the precision. In bf16
//! the checkpoint holds the f32 master weights (what the optimizer trains) and the logits are
//! the bf16 ones, widened.

use super::config::DecoderConfig;
use super::corpus::Corpus;
use super::params::Mode;
use super::trainer::DecoderTrainer;
use crate::model::{write_safetensors, Checkpoint, HostTensor, NamedTensors};
use crate::train::{Launch, TrainError};
use kernel_runtime::Device;
use std::collections::HashMap;
use std::path::Path;

/// Steps a QLoRA run takes before the dumped one.
pub const QLORA_WARM_STEPS: u32 = 2;

/// The step file in a dump directory.
pub const STEP_FILE: &str = "step.safetensors";

/// Writes the first step (with QLoRA the step after [`QLORA_WARM_STEPS`]) of `cfg` on `corpus`
/// (from the model checkpointed in `base`, if given) into `dir` (created): with QLoRA the
/// checkpoint's `model.safetensors` holds the base as the NF4 weights decode (what the adapters
/// were trained over). Token ids and targets are stored as F32 (exact below 2²⁴). Returns the
/// step's loss.
///
/// ```
/// use ptxkit::train::decoder::{dump_step, Corpus, DecoderConfig, STEP_FILE};
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let dir = std::env::temp_dir().join(format!("ptxkit-doc-dump-{}", std::process::id()));
/// let cfg = DecoderConfig { seqs: 1, ..DecoderConfig::tiny() };
/// let loss = dump_step(&kernel_runtime::Device::emulator(), &cfg, Corpus::builtin(), None, &dir)?;
/// let step = ptxkit::model::read_safetensors(&dir.join(STEP_FILE))?;
/// assert_eq!(step["loss"].data, vec![loss]);
/// assert!(step.contains_key("grad.model.layers.0.self_attn.q_proj.weight"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(()) }
/// ```
pub fn dump_step(
    device: &Device,
    cfg: &DecoderConfig,
    corpus: Corpus,
    base: Option<&Path>,
    dir: &Path,
) -> Result<f32, TrainError> {
    let mut trainer = match base {
        Some(from) => DecoderTrainer::from_base(device, cfg, corpus, Launch::Direct, from)?,
        None => DecoderTrainer::new(device, cfg, corpus, Launch::Direct)?,
    };
    let cfg = *trainer.config();
    if cfg.mode != Mode::Full {
        // LoRA's B starts at zero, which zeroes A's gradient: step first so both are live.
        for _ in 0..QLORA_WARM_STEPS {
            trainer.step()?;
        }
    }
    trainer.save(dir)?;
    if let Mode::QLora { .. } = cfg.mode {
        Checkpoint::save(dir, &cfg.model, &trainer.decoded_base()?)?;
    }
    let batch = trainer.batch(trainer.steps_done() + 1);
    trainer.step()?;
    let loss = trainer.loss()?;
    let (t, s, v) = (cfg.tokens(), cfg.seq_len, cfg.model.vocab);
    let mut out = NamedTensors::new();
    let as_f32 = |x: &[u32]| x.iter().map(|&i| i as f32).collect::<Vec<_>>();
    out.insert(
        "input_ids".into(),
        HostTensor::new(vec![cfg.seqs, s], as_f32(&batch.ids)),
    );
    let targets: Vec<u32> = batch.targets.iter().map(|&x| x as u32).collect();
    out.insert(
        "targets".into(),
        HostTensor::new(vec![cfg.seqs, s], as_f32(&targets)),
    );
    out.insert(
        "logits".into(),
        HostTensor::new(vec![cfg.seqs, s, v], trainer.logits()?),
    );
    debug_assert_eq!(t, cfg.seqs * s);
    out.insert("loss".into(), HostTensor::new(vec![1], vec![loss]));
    for (name, g) in trainer.gradients()? {
        out.insert(format!("grad.{name}"), g);
    }
    let (norm, _) = trainer.grad_norm_and_scale()?;
    out.insert("grad_norm".into(), HostTensor::new(vec![1], vec![norm]));
    let meta = HashMap::from([
        (
            "mode".to_string(),
            match cfg.mode {
                Mode::Full => "full".to_string(),
                Mode::QLora { rank, alpha } => format!("qlora rank {rank} alpha {alpha}"),
            },
        ),
        ("precision".to_string(), cfg.precision.to_string()),
    ]);
    write_safetensors(&dir.join(STEP_FILE), &out, Some(meta))?;
    Ok(loss)
}
