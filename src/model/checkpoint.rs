//! A checkpoint directory: `model.safetensors` (the weights under their Hugging Face names,
//! F32) beside a Hugging Face `config.json`. `ptxkit train` writes and resumes from them;
//! `ptxkit quantize` reads them.

use super::config::ModelConfig;
use super::error::ModelError;
use super::hf_config::{config_from_json, config_to_json};
use super::names::TensorId;
use super::safetensors_io::{read_expected, write_safetensors, NamedTensors};
use std::path::Path;

/// Loads and saves checkpoint directories.
pub struct Checkpoint;

impl Checkpoint {
    /// The weights' file in a checkpoint directory.
    pub const WEIGHTS: &'static str = "model.safetensors";
    /// The architecture's file in a checkpoint directory.
    pub const CONFIG: &'static str = "config.json";

    /// The config and every weight of the checkpoint in `dir`, widened to f32 and keyed by
    /// their Hugging Face names (exactly the tensors [`TensorId::all`] lists for the config;
    /// others in the file are skipped). A missing tensor, a shape that does not match the
    /// config, a dtype other than F32 or BF16, or a truncated file is an error naming it.
    ///
    /// ```
    /// use ptxkit::model::{Checkpoint, ModelConfig, TensorId};
    /// # fn main() -> Result<(), ptxkit::model::ModelError> {
    /// let dir = std::env::temp_dir().join(format!("ptxkit-doc-ckpt-{}", std::process::id()));
    /// let cfg = ModelConfig { layers: 1, ..ModelConfig::TINY };
    /// let weights = ptxkit::model::init_weights(&cfg, 7);
    /// Checkpoint::save(&dir, &cfg, &weights)?;
    /// let (back, loaded) = Checkpoint::load(&dir)?;
    /// assert_eq!(back, cfg);
    /// assert_eq!(loaded, weights);
    /// assert_eq!(loaded.len(), TensorId::all(&cfg).len());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok(()) }
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<(ModelConfig, NamedTensors), ModelError> {
        let dir = dir.as_ref();
        let config_path = dir.join(Self::CONFIG);
        let text =
            std::fs::read_to_string(&config_path).map_err(|e| ModelError::io(&config_path, e))?;
        let cfg = config_from_json(&text, &config_path)?;
        let wanted: Vec<(String, Vec<usize>)> = TensorId::all(&cfg)
            .iter()
            .map(|t| (t.name(), t.shape(&cfg)))
            .collect();
        let tensors = read_expected(&dir.join(Self::WEIGHTS), &wanted)?;
        Ok((cfg, tensors))
    }

    /// Writes `cfg` and `weights` (every tensor [`TensorId::all`] lists, of its shape) into
    /// `dir`, creating it. Everything is checked before anything is written.
    pub fn save(
        dir: impl AsRef<Path>,
        cfg: &ModelConfig,
        weights: &NamedTensors,
    ) -> Result<(), ModelError> {
        let dir = dir.as_ref();
        cfg.validate()?;
        check_weights(cfg, weights)?;
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        write_safetensors(&dir.join(Self::WEIGHTS), weights, None)?;
        let config_path = dir.join(Self::CONFIG);
        std::fs::write(&config_path, config_to_json(cfg))
            .map_err(|e| ModelError::io(&config_path, e))
    }
}

/// Every tensor `cfg` has is in `weights` with its shape.
fn check_weights(cfg: &ModelConfig, weights: &NamedTensors) -> Result<(), ModelError> {
    let here = Path::new(Checkpoint::WEIGHTS);
    for id in TensorId::all(cfg) {
        let name = id.name();
        let Some(t) = weights.get(&name) else {
            return Err(ModelError::MissingTensor {
                path: here.into(),
                name,
            });
        };
        let expected = id.shape(cfg);
        if t.shape != expected || t.data.len() != id.len(cfg) {
            return Err(ModelError::TensorShape {
                path: here.into(),
                name,
                expected,
                actual: t.shape.clone(),
            });
        }
    }
    Ok(())
}
