//! The decoder's architecture: the sizes and options a Llama- or Qwen2-style decoder is built
//! from, shared by training (`safetensors` checkpoints with a Hugging Face `config.json`) and
//! serving (a GGUF file's `llama.*` metadata keys).

use super::error::ModelError;

/// A Llama-style decoder: `layers` blocks of RMSNorm → attention (GQA, RoPE, causal) →
/// residual, RMSNorm → SwiGLU MLP → residual, then a final RMSNorm and an LM head.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelConfig {
    /// Tokens in the vocabulary (256 bytes plus the specials for the byte-level tokenizer).
    pub vocab: usize,
    /// The residual stream's width (`hidden_size`).
    pub hidden: usize,
    /// Decoder blocks (`num_hidden_layers`).
    pub layers: usize,
    /// Query heads (`num_attention_heads`).
    pub heads_q: usize,
    /// Key/value heads (`num_key_value_heads`); divides `heads_q`.
    pub heads_kv: usize,
    /// Features per head; `hidden == heads_q * head_dim`.
    pub head_dim: usize,
    /// The MLP's inner width (`intermediate_size`).
    pub ffn: usize,
    /// RoPE's base (`rope_theta`).
    pub rope_theta: f32,
    /// RMSNorm's epsilon (`rms_norm_eps`).
    pub norm_eps: f32,
    /// The LM head reuses the embedding matrix (`tie_word_embeddings`).
    pub tied_embeddings: bool,
    /// Qwen2-style biases on the q, k and v projections.
    pub qkv_bias: bool,
    /// The longest sequence the model is trained or served at (`max_position_embeddings`).
    pub max_seq: usize,
}

impl ModelConfig {
    /// Emulator-sized: a step of a few sequences runs in seconds on the CPU. Head dim 64 is
    /// the smallest the flash-attention kernels take.
    pub const TINY: ModelConfig = ModelConfig {
        vocab: super::tokenizer::VOCAB,
        hidden: 128,
        layers: 2,
        heads_q: 2,
        heads_kv: 1,
        head_dim: 64,
        ffn: 256,
        rope_theta: 10_000.0,
        norm_eps: 1e-5,
        tied_embeddings: false,
        qkv_bias: false,
        max_seq: 32,
    };

    /// A small GPU model that trains in minutes.
    pub const SMALL: ModelConfig = ModelConfig {
        vocab: super::tokenizer::VOCAB,
        hidden: 512,
        layers: 8,
        heads_q: 8,
        heads_kv: 2,
        head_dim: 64,
        ffn: 1408,
        rope_theta: 10_000.0,
        norm_eps: 1e-5,
        tied_embeddings: false,
        qkv_bias: false,
        max_seq: 512,
    };

    /// Checks the sizes against each other; every model built from a config calls this first.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |what: String| Err(ModelError::Config(what));
        if self.vocab == 0 || self.hidden == 0 || self.layers == 0 || self.ffn == 0 {
            return bad("vocab, hidden, layers and ffn must all be at least 1".into());
        }
        if self.heads_q == 0 || self.heads_kv == 0 || self.head_dim == 0 {
            return bad("heads_q, heads_kv and head_dim must all be at least 1".into());
        }
        if !self.heads_q.is_multiple_of(self.heads_kv) {
            return bad(format!(
                "heads_q ({}) must be a multiple of heads_kv ({})",
                self.heads_q, self.heads_kv
            ));
        }
        if self.heads_q * self.head_dim != self.hidden {
            return bad(format!(
                "heads_q × head_dim ({} × {}) must equal hidden ({})",
                self.heads_q, self.head_dim, self.hidden
            ));
        }
        if !matches!(self.head_dim, 64 | 128 | 256) {
            return bad(format!(
                "head_dim {} is not one the attention kernels take; use 64, 128 or 256",
                self.head_dim
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return bad(format!("rope_theta ({}) must be positive", self.rope_theta));
        }
        if !(self.norm_eps.is_finite() && self.norm_eps > 0.0) {
            return bad(format!("norm_eps ({}) must be positive", self.norm_eps));
        }
        if self.max_seq == 0 {
            return bad("max_seq must be at least 1".into());
        }
        Ok(())
    }

    /// Features of the concatenated k (or v) projection output.
    pub fn kv_width(&self) -> usize {
        self.heads_kv * self.head_dim
    }

    /// Parameters in the model, embeddings and head included.
    pub fn parameter_count(&self) -> usize {
        let h = self.hidden;
        let attn = h * h * 2
            + h * self.kv_width() * 2
            + if self.qkv_bias {
                h + 2 * self.kv_width()
            } else {
                0
            };
        let mlp = 3 * h * self.ffn;
        let norms = 2 * h;
        let head = if self.tied_embeddings {
            0
        } else {
            self.vocab * h
        };
        self.vocab * h + self.layers * (attn + mlp + norms) + h + head
    }
}
