//! The decoder's tensors under their Hugging Face Llama names, with their shapes
//! (`[out_features, in_features]` for a projection), in one fixed order.

use super::config::ModelConfig;

/// One weight of a decoder layer, named as Hugging Face's Llama and Qwen2 name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LayerTensor {
    InputNorm,
    Q,
    K,
    V,
    QBias,
    KBias,
    VBias,
    O,
    PostNorm,
    Gate,
    Up,
    Down,
}

impl LayerTensor {
    /// Every layer tensor, in checkpoint order (biases only with `qkv_bias`).
    pub const ALL: [LayerTensor; 12] = [
        LayerTensor::InputNorm,
        LayerTensor::Q,
        LayerTensor::K,
        LayerTensor::V,
        LayerTensor::QBias,
        LayerTensor::KBias,
        LayerTensor::VBias,
        LayerTensor::O,
        LayerTensor::PostNorm,
        LayerTensor::Gate,
        LayerTensor::Up,
        LayerTensor::Down,
    ];

    /// The projections LoRA adapts, in peft's usual target order.
    pub const PROJECTIONS: [LayerTensor; 7] = [
        LayerTensor::Q,
        LayerTensor::K,
        LayerTensor::V,
        LayerTensor::O,
        LayerTensor::Gate,
        LayerTensor::Up,
        LayerTensor::Down,
    ];

    /// The name after `model.layers.{i}.`.
    ///
    /// ```
    /// use ptxkit::model::LayerTensor;
    /// assert_eq!(LayerTensor::Gate.suffix(), "mlp.gate_proj.weight");
    /// ```
    pub fn suffix(self) -> &'static str {
        match self {
            LayerTensor::InputNorm => "input_layernorm.weight",
            LayerTensor::Q => "self_attn.q_proj.weight",
            LayerTensor::K => "self_attn.k_proj.weight",
            LayerTensor::V => "self_attn.v_proj.weight",
            LayerTensor::QBias => "self_attn.q_proj.bias",
            LayerTensor::KBias => "self_attn.k_proj.bias",
            LayerTensor::VBias => "self_attn.v_proj.bias",
            LayerTensor::O => "self_attn.o_proj.weight",
            LayerTensor::PostNorm => "post_attention_layernorm.weight",
            LayerTensor::Gate => "mlp.gate_proj.weight",
            LayerTensor::Up => "mlp.up_proj.weight",
            LayerTensor::Down => "mlp.down_proj.weight",
        }
    }

    /// The module a LoRA adapter on this projection hangs from (`self_attn.q_proj`), as peft
    /// names it.
    pub fn module(self) -> &'static str {
        let s = self.suffix();
        s.rsplit_once('.').map_or(s, |(m, _)| m)
    }

    /// Whether the config has this tensor.
    pub fn present(self, cfg: &ModelConfig) -> bool {
        cfg.qkv_bias || !self.is_bias()
    }

    /// A q, k or v bias.
    pub fn is_bias(self) -> bool {
        matches!(
            self,
            LayerTensor::QBias | LayerTensor::KBias | LayerTensor::VBias
        )
    }

    /// A norm's γ (no weight decay).
    pub fn is_norm(self) -> bool {
        matches!(self, LayerTensor::InputNorm | LayerTensor::PostNorm)
    }

    /// The shape, `[out, in]` for a projection and `[n]` for a vector.
    ///
    /// ```
    /// use ptxkit::model::{LayerTensor, ModelConfig};
    /// let c = ModelConfig::TINY;
    /// assert_eq!(LayerTensor::K.shape(&c), vec![c.kv_width(), c.hidden]);
    /// ```
    pub fn shape(self, cfg: &ModelConfig) -> Vec<usize> {
        let (h, kv, f) = (cfg.hidden, cfg.kv_width(), cfg.ffn);
        let q = cfg.heads_q * cfg.head_dim;
        match self {
            LayerTensor::InputNorm | LayerTensor::PostNorm => vec![h],
            LayerTensor::Q => vec![q, h],
            LayerTensor::K | LayerTensor::V => vec![kv, h],
            LayerTensor::QBias => vec![q],
            LayerTensor::KBias | LayerTensor::VBias => vec![kv],
            LayerTensor::O => vec![h, q],
            LayerTensor::Gate | LayerTensor::Up => vec![f, h],
            LayerTensor::Down => vec![h, f],
        }
    }
}

/// A tensor of the whole model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorId {
    /// `model.embed_tokens.weight`, `[vocab, hidden]`.
    Embed,
    /// `model.layers.{layer}.…`.
    Layer(usize, LayerTensor),
    /// `model.norm.weight`, `[hidden]`.
    FinalNorm,
    /// `lm_head.weight`, `[vocab, hidden]`; absent when the embeddings are tied.
    LmHead,
}

impl TensorId {
    /// Every tensor `cfg` has, in checkpoint order: the embedding, each layer's, the final
    /// norm, the head.
    ///
    /// ```
    /// use ptxkit::model::{ModelConfig, TensorId};
    /// let c = ModelConfig::TINY;
    /// let n: usize = TensorId::all(&c).iter().map(|t| t.len(&c)).sum();
    /// assert_eq!(n, c.parameter_count());
    /// ```
    pub fn all(cfg: &ModelConfig) -> Vec<TensorId> {
        let mut ids = vec![TensorId::Embed];
        for layer in 0..cfg.layers {
            ids.extend(
                LayerTensor::ALL
                    .iter()
                    .filter(|t| t.present(cfg))
                    .map(|&t| TensorId::Layer(layer, t)),
            );
        }
        ids.push(TensorId::FinalNorm);
        if !cfg.tied_embeddings {
            ids.push(TensorId::LmHead);
        }
        ids
    }

    /// The Hugging Face name.
    ///
    /// ```
    /// use ptxkit::model::{LayerTensor, TensorId};
    /// assert_eq!(TensorId::Layer(3, LayerTensor::O).name(), "model.layers.3.self_attn.o_proj.weight");
    /// ```
    pub fn name(&self) -> String {
        match self {
            TensorId::Embed => "model.embed_tokens.weight".into(),
            TensorId::Layer(i, t) => format!("model.layers.{i}.{}", t.suffix()),
            TensorId::FinalNorm => "model.norm.weight".into(),
            TensorId::LmHead => "lm_head.weight".into(),
        }
    }

    /// The shape `cfg` gives it.
    pub fn shape(&self, cfg: &ModelConfig) -> Vec<usize> {
        match self {
            TensorId::Embed | TensorId::LmHead => vec![cfg.vocab, cfg.hidden],
            TensorId::Layer(_, t) => t.shape(cfg),
            TensorId::FinalNorm => vec![cfg.hidden],
        }
    }

    /// Elements.
    pub fn len(&self, cfg: &ModelConfig) -> usize {
        self.shape(cfg).iter().product()
    }

    /// Whether AdamW decays it: the matrices, not the norms' γ or the biases.
    pub fn decay(&self) -> bool {
        match self {
            TensorId::Layer(_, t) => !(t.is_norm() || t.is_bias()),
            TensorId::FinalNorm => false,
            TensorId::Embed | TensorId::LmHead => true,
        }
    }
}
