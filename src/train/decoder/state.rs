//! A decoder run's checkpoint directory: the model (`model.safetensors` + `config.json`,
//! see [`Checkpoint`]), with QLoRA the adapters in peft's form (`adapter_model.safetensors` +
//! `adapter_config.json`), and the optimizer's moments and step (`optimizer.safetensors`).

use super::config::DecoderConfig;
use super::params::{trainable, Mode, ParamId};
use crate::model::{
    read_safetensors, write_safetensors, Checkpoint, HostTensor, LayerTensor, ModelConfig,
    ModelError, NamedTensors,
};
use crate::train::TrainError;
use std::collections::HashMap;
use std::path::Path;

/// The optimizer's file in a checkpoint directory.
pub const OPTIMIZER: &str = "optimizer.safetensors";
/// The adapters' file (QLoRA).
pub const ADAPTER: &str = "adapter_model.safetensors";
/// The adapters' config, as peft writes it.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";

/// The optimizer's state beside the trained tensors.
#[derive(Clone, Debug)]
pub(crate) struct Moments {
    pub m: NamedTensors,
    pub v: NamedTensors,
    /// Steps taken.
    pub step: u32,
    /// The seed the batches are drawn with.
    pub seed: u64,
}

/// Writes a checkpoint of `cfg` into `dir`: `base` (every model tensor), `trained` (by
/// name: the model's tensors, or the adapters) and `moments`.
pub(crate) fn save(
    dir: &Path,
    cfg: &DecoderConfig,
    base: &NamedTensors,
    trained: &NamedTensors,
    moments: &Moments,
) -> Result<(), TrainError> {
    match cfg.mode {
        Mode::Full => Checkpoint::save(dir, &cfg.model, trained)?,
        Mode::QLora { rank, alpha } => {
            Checkpoint::save(dir, &cfg.model, base)?;
            write_safetensors(&dir.join(ADAPTER), trained, None)?;
            let path = dir.join(ADAPTER_CONFIG);
            std::fs::write(&path, adapter_config(rank, alpha))
                .map_err(|e| ModelError::io(&path, e))?;
        }
    }
    let mut opt = NamedTensors::new();
    for (name, t) in &moments.m {
        opt.insert(format!("{name}.exp_avg"), t.clone());
    }
    for (name, t) in &moments.v {
        opt.insert(format!("{name}.exp_avg_sq"), t.clone());
    }
    let meta = HashMap::from([
        ("step".to_string(), moments.step.to_string()),
        ("seed".to_string(), moments.seed.to_string()),
    ]);
    write_safetensors(&dir.join(OPTIMIZER), &opt, Some(meta))?;
    Ok(())
}

/// peft's `adapter_config.json` for adapters of `rank` and `alpha` on every projection.
fn adapter_config(rank: usize, alpha: f32) -> String {
    let modules: Vec<String> = LayerTensor::PROJECTIONS
        .iter()
        .map(|t| {
            t.module()
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let json = serde_json::json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": rank,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": modules,
        "fan_in_fan_out": false,
        "inference_mode": false,
        "base_model_name_or_path": null,
    });
    serde_json::to_string_pretty(&json).unwrap_or_default()
}

/// What a checkpoint directory resumes: the model's config, every model tensor, the trained
/// tensors and the optimizer's state.
pub(crate) struct Resumed {
    pub model: ModelConfig,
    pub base: NamedTensors,
    pub trained: NamedTensors,
    pub moments: Moments,
}

/// Reads the checkpoint in `dir` for a run in `mode`; every trained tensor and both its
/// moments must be there with their shapes.
pub(crate) fn load(dir: &Path, mode: Mode) -> Result<Resumed, TrainError> {
    let (model, base) = Checkpoint::load(dir)?;
    let trained = match mode {
        Mode::Full => base.clone(),
        Mode::QLora { .. } => read_safetensors(&dir.join(ADAPTER))?,
    };
    let opt_path = dir.join(OPTIMIZER);
    let opt = read_safetensors(&opt_path)?;
    let meta = read_metadata(&opt_path)?;
    let number = |key: &str| -> Result<u64, TrainError> {
        meta.get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                TrainError::Config(format!(
                    "{}: the header has no `{key}`; resume from a directory `ptxkit train --checkpoint` wrote",
                    opt_path.display()
                ))
            })
    };
    let (step, seed) = (number("step")? as u32, number("seed")?);
    let mut moments = Moments {
        m: NamedTensors::new(),
        v: NamedTensors::new(),
        step,
        seed,
    };
    let mut picked = NamedTensors::new();
    for p in trainable(&model, mode) {
        let name = p.name();
        let shape = p.shape(&model, mode.rank());
        let get = |set: &NamedTensors, key: &str, file: &str| -> Result<HostTensor, TrainError> {
            let t = set.get(key).ok_or_else(|| ModelError::MissingTensor {
                path: dir.join(file),
                name: key.into(),
            })?;
            if t.shape != shape {
                return Err(ModelError::TensorShape {
                    path: dir.join(file),
                    name: key.into(),
                    expected: shape.clone(),
                    actual: t.shape.clone(),
                }
                .into());
            }
            Ok(t.clone())
        };
        let file = match p {
            ParamId::Model(_) => Checkpoint::WEIGHTS,
            _ => ADAPTER,
        };
        picked.insert(name.clone(), get(&trained, &name, file)?);
        let m = get(&opt, &format!("{name}.exp_avg"), OPTIMIZER)?;
        let v = get(&opt, &format!("{name}.exp_avg_sq"), OPTIMIZER)?;
        moments.m.insert(name.clone(), m);
        moments.v.insert(name, v);
    }
    Ok(Resumed {
        model,
        base,
        trained: picked,
        moments,
    })
}

/// The string metadata in a safetensors file's header.
fn read_metadata(path: &Path) -> Result<HashMap<String, String>, TrainError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let (_, meta) =
        safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| ModelError::Safetensors {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    Ok(meta.metadata().clone().unwrap_or_default())
}
