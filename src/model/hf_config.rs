//! The Hugging Face `config.json` of a Llama or Qwen2 checkpoint, read into and written from
//! a [`ModelConfig`].

use super::config::ModelConfig;
use super::error::ModelError;
use super::tokenizer;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The keys of `config.json` this decoder reads and writes; others are ignored on read.
#[derive(Debug, Deserialize, Serialize)]
struct HfConfig {
    model_type: String,
    #[serde(default)]
    architectures: Vec<String>,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    #[serde(default)]
    num_key_value_heads: Option<usize>,
    #[serde(default)]
    head_dim: Option<usize>,
    #[serde(default = "default_theta")]
    rope_theta: f32,
    #[serde(default = "default_eps")]
    rms_norm_eps: f32,
    vocab_size: usize,
    #[serde(default)]
    tie_word_embeddings: bool,
    max_position_embeddings: usize,
    #[serde(default)]
    attention_bias: bool,
    #[serde(default = "silu")]
    hidden_act: String,
    #[serde(default, skip_deserializing)]
    bos_token_id: u32,
    #[serde(default, skip_deserializing)]
    eos_token_id: u32,
    #[serde(default, skip_deserializing)]
    pad_token_id: u32,
    #[serde(default, skip_deserializing)]
    torch_dtype: String,
}

fn default_theta() -> f32 {
    10_000.0
}

fn default_eps() -> f32 {
    1e-6
}

fn silu() -> String {
    "silu".into()
}

/// `cfg` as a `config.json` (pretty-printed): `model_type` "qwen2" when the q, k and v
/// projections have biases, else "llama".
///
/// ```
/// use ptxkit::model::{config_from_json, config_to_json, ModelConfig};
/// let json = config_to_json(&ModelConfig::TINY);
/// assert!(json.contains("\"model_type\": \"llama\""));
/// let back = config_from_json(&json, "config.json".as_ref()).unwrap();
/// assert_eq!(back, ModelConfig::TINY);
/// ```
pub fn config_to_json(cfg: &ModelConfig) -> String {
    let (model_type, arch) = if cfg.qkv_bias {
        ("qwen2", "Qwen2ForCausalLM")
    } else {
        ("llama", "LlamaForCausalLM")
    };
    let hf = HfConfig {
        model_type: model_type.into(),
        architectures: vec![arch.into()],
        hidden_size: cfg.hidden,
        intermediate_size: cfg.ffn,
        num_hidden_layers: cfg.layers,
        num_attention_heads: cfg.heads_q,
        num_key_value_heads: Some(cfg.heads_kv),
        head_dim: Some(cfg.head_dim),
        rope_theta: cfg.rope_theta,
        rms_norm_eps: cfg.norm_eps,
        vocab_size: cfg.vocab,
        tie_word_embeddings: cfg.tied_embeddings,
        max_position_embeddings: cfg.max_seq,
        attention_bias: cfg.qkv_bias,
        hidden_act: silu(),
        bos_token_id: tokenizer::BOS,
        eos_token_id: tokenizer::EOS,
        pad_token_id: tokenizer::PAD,
        torch_dtype: "float32".into(),
    };
    // Serializing a struct of plain numbers and strings cannot fail.
    serde_json::to_string_pretty(&hf).unwrap_or_default()
}

/// The [`ModelConfig`] of a `config.json`'s text (`path` names it in errors), validated.
pub fn config_from_json(text: &str, path: &Path) -> Result<ModelConfig, ModelError> {
    let hf: HfConfig = serde_json::from_str(text).map_err(|e| ModelError::ConfigJson {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let qkv_bias = match hf.model_type.as_str() {
        "llama" if hf.attention_bias => {
            return Err(ModelError::Config(
                "a Llama config with attention_bias also biases o_proj, which this decoder does not have; use a Qwen2 config for q, k and v biases".into(),
            ))
        }
        "llama" => false,
        "qwen2" => true,
        other => {
            return Err(ModelError::ModelType {
                path: path.to_path_buf(),
                found: other.into(),
            })
        }
    };
    if hf.hidden_act != "silu" {
        return Err(ModelError::Config(format!(
            "hidden_act \"{}\": this decoder's MLP is SwiGLU, which needs \"silu\"",
            hf.hidden_act
        )));
    }
    let heads_q = hf.num_attention_heads;
    let cfg = ModelConfig {
        vocab: hf.vocab_size,
        hidden: hf.hidden_size,
        layers: hf.num_hidden_layers,
        heads_q,
        heads_kv: hf.num_key_value_heads.unwrap_or(heads_q),
        head_dim: hf
            .head_dim
            .unwrap_or(hf.hidden_size.checked_div(heads_q).unwrap_or(0)),
        ffn: hf.intermediate_size,
        rope_theta: hf.rope_theta,
        norm_eps: hf.rms_norm_eps,
        tied_embeddings: hf.tie_word_embeddings,
        qkv_bias,
        max_seq: hf.max_position_embeddings,
    };
    cfg.validate()?;
    Ok(cfg)
}
