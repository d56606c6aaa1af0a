//! Reads a training checkpoint: a directory with a Hugging Face `config.json` and a
//! `model.safetensors` of F32 tensors under Hugging Face Llama names.

use super::error::LlamaError;
use super::names::Weight;
use crate::model::ModelConfig;
use serde_json::Value as Json;
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
        let config = read_config(&dir.join("config.json"))?;
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path).map_err(|source| LlamaError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let st =
            safetensors::SafeTensors::deserialize(&bytes).map_err(|e| LlamaError::Safetensors {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
        let mut tensors = HashMap::new();
        for w in Weight::all(&config) {
            let name = w.hf_name();
            let view = st
                .tensor(&name)
                .map_err(|_| LlamaError::MissingTensor(name.clone()))?;
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(LlamaError::Dtype {
                    name,
                    dtype: format!("{:?}", view.dtype()),
                });
            }
            let expected = w.shape(&config);
            if view.shape() != expected.as_slice() {
                return Err(LlamaError::Shape {
                    name,
                    expected,
                    found: view.shape().to_vec(),
                });
            }
            let data = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            tensors.insert(name, (expected, data));
        }
        Ok(Checkpoint { config, tensors })
    }

    /// The weight's values (its presence and shape were checked by [`load`](Self::load)).
    pub fn weight(&self, w: Weight) -> &[f32] {
        &self.tensors[&w.hf_name()].1
    }
}

fn read_config(path: &Path) -> Result<ModelConfig, LlamaError> {
    let bad = |detail: String| LlamaError::Config {
        path: path.display().to_string(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|source| LlamaError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let json: Json = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let int = |key: &str| -> Result<Option<usize>, LlamaError> {
        match json.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| bad(format!("{key} must be a non-negative integer"))),
        }
    };
    let need = |key: &str| int(key)?.ok_or_else(|| bad(format!("{key} is missing")));
    let float = |key: &str, default: f32| -> Result<f32, LlamaError> {
        match json.get(key) {
            None | Some(Json::Null) => Ok(default),
            Some(v) => v
                .as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| bad(format!("{key} must be a number"))),
        }
    };
    let flag = |key: &str, default: bool| -> Result<bool, LlamaError> {
        match json.get(key) {
            None | Some(Json::Null) => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad(format!("{key} must be true or false"))),
        }
    };
    let hidden = need("hidden_size")?;
    let heads_q = need("num_attention_heads")?;
    let qwen2 = json.get("model_type").and_then(Json::as_str) == Some("qwen2");
    let config = ModelConfig {
        vocab: need("vocab_size")?,
        hidden,
        layers: need("num_hidden_layers")?,
        heads_q,
        heads_kv: int("num_key_value_heads")?.unwrap_or(heads_q),
        head_dim: int("head_dim")?.unwrap_or(hidden / heads_q.max(1)),
        ffn: need("intermediate_size")?,
        rope_theta: float("rope_theta", 10_000.0)?,
        norm_eps: float("rms_norm_eps", 1e-6)?,
        tied_embeddings: flag("tie_word_embeddings", false)?,
        qkv_bias: flag("attention_bias", qwen2)?,
        max_seq: int("max_position_embeddings")?.unwrap_or(2048),
    };
    config.validate()?;
    Ok(config)
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
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = Weight::all(cfg)
        .into_iter()
        .map(|w| {
            let (shape, values) = &ckpt.tensors[&w.hf_name()];
            let bytes = values.iter().flat_map(|x| x.to_le_bytes()).collect();
            (w.hf_name(), shape.clone(), bytes)
        })
        .collect();
    let path = dir.join("model.safetensors");
    let st_error = |e: safetensors::SafeTensorError| LlamaError::Safetensors {
        path: path.display().to_string(),
        detail: e.to_string(),
    };
    let mut views = Vec::with_capacity(data.len());
    for (name, shape, bytes) in &data {
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
                .map_err(st_error)?;
        views.push((name.clone(), view));
    }
    safetensors::serialize_to_file(views, None, &path).map_err(st_error)?;
    let config = serde_json::json!({
        "model_type": "llama",
        "vocab_size": cfg.vocab,
        "hidden_size": cfg.hidden,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads_q,
        "num_key_value_heads": cfg.heads_kv,
        "head_dim": cfg.head_dim,
        "intermediate_size": cfg.ffn,
        "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.norm_eps,
        "tie_word_embeddings": cfg.tied_embeddings,
        "attention_bias": cfg.qkv_bias,
        "max_position_embeddings": cfg.max_seq,
    });
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).map_err(|source| LlamaError::Io {
        path: path.display().to_string(),
        source,
    })
}
