//! A training checkpoint in memory for quantization, read through [`crate::model::Checkpoint`]
//! (a Hugging Face `config.json` and a `model.safetensors` under Hugging Face Llama names).

use super::error::LlamaError;
use super::names::Weight;
use crate::model::ModelConfig;
use std::collections::HashMap;
use std::path::Path;

/// A checkpoint in memory: its config and every weight it holds, f32, row-major.
pub struct Checkpoint {
    /// The decoder's sizes, from `config.json`.
    pub config: ModelConfig,
    tensors: HashMap<String, (Vec<usize>, Vec<f32>)>,
}

impl Checkpoint {
    /// Reads `dir/config.json` and `dir/model.safetensors`, checking every weight the config
    /// implies is present with its shape.
    ///
    /// ```
    /// use ptxkit::gguf::llama::{write_random, Checkpoint, Weight};
    /// use ptxkit::model::ModelConfig;
    /// # fn main() -> Result<(), ptxkit::gguf::llama::LlamaError> {
    /// let dir = tempfile::tempdir().unwrap();
    /// write_random(dir.path(), &ModelConfig::TINY, 1)?;
    /// let ckpt = Checkpoint::load(dir.path())?;
    /// assert_eq!(ckpt.config, ModelConfig::TINY);
    /// assert_eq!(ckpt.weight(Weight::OutputNorm).len(), 128);
    /// # Ok(()) }
    /// ```
    pub fn load(dir: &Path) -> Result<Checkpoint, LlamaError> {
        let (config, named) = crate::model::Checkpoint::load(dir)?;
        let tensors = named
            .into_iter()
            .map(|(name, t)| (name, (t.shape, t.data)))
            .collect();
        Ok(Checkpoint { config, tensors })
    }

    /// The weight's values (its presence and shape were checked by [`load`](Self::load)).
    pub fn weight(&self, w: Weight) -> &[f32] {
        &self.tensors[&w.hf_name()].1
    }
}

impl Checkpoint {
    /// A checkpoint of `cfg` with seeded random weights, for tests, examples and benchmarks:
    /// uniform weights of variance `1/in_features`, norms near 1, biases small.
    #[doc(hidden)]
    pub fn random(cfg: &ModelConfig, seed: u64) -> Checkpoint {
        let mut state = seed;
        let mut uniform = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut tensors = HashMap::new();
        for w in Weight::all(cfg) {
            let shape = w.shape(cfg);
            let n: usize = shape.iter().product();
            let scale = if w.is_vector() {
                0.1
            } else {
                (3.0 / shape[shape.len() - 1] as f64).sqrt()
            };
            let base = match w {
                Weight::AttnNorm(_) | Weight::FfnNorm(_) | Weight::OutputNorm => 1.0,
                _ => 0.0,
            };
            let values = (0..n).map(|_| (base + scale * uniform()) as f32).collect();
            tensors.insert(w.hf_name(), (shape, values));
        }
        Checkpoint {
            config: *cfg,
            tensors,
        }
    }
}

/// Writes [`Checkpoint::random`] to `dir` as `model.safetensors` and `config.json`.
#[doc(hidden)]
pub fn write_random(dir: &Path, cfg: &ModelConfig, seed: u64) -> Result<(), LlamaError> {
    let ckpt = Checkpoint::random(cfg, seed);
    let named: crate::model::NamedTensors = ckpt
        .tensors
        .into_iter()
        .map(|(name, (shape, data))| (name, crate::model::HostTensor { shape, data }))
        .collect();
    crate::model::Checkpoint::save(dir, cfg, &named)?;
    Ok(())
}
