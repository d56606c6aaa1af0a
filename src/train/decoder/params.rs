//! What a decoder run trains: every model tensor (full fine-tuning), or LoRA adapters on a
//! frozen NF4 base (QLoRA), in the order of the optimizer's flat layout.

use crate::model::{LayerTensor, ModelConfig, TensorId};

/// How the decoder is trained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Every weight is trained in f32.
    Full,
    /// The projections are quantized to NF4 and frozen, as are the embedding, norms and head;
    /// LoRA adapters of `rank` on every projection train, scaled by `alpha / rank`.
    QLora { rank: usize, alpha: f32 },
}

impl Mode {
    /// The adapters' rank (0 without adapters).
    pub fn rank(&self) -> usize {
        match self {
            Mode::Full => 0,
            Mode::QLora { rank, .. } => *rank,
        }
    }

    /// The adapters' scale `alpha / rank`.
    pub fn lora_scale(&self) -> f32 {
        match self {
            Mode::Full => 0.0,
            Mode::QLora { rank, alpha } => alpha / *rank as f32,
        }
    }
}

/// One trained tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamId {
    /// A weight of the model itself.
    Model(TensorId),
    /// The down-projecting half `A` (`rank × in`) of the adapter on a layer's projection.
    LoraA(usize, LayerTensor),
    /// The up-projecting half `B` (`out × rank`).
    LoraB(usize, LayerTensor),
}

impl ParamId {
    /// The name it is saved under: Hugging Face's for model weights, peft's for adapters.
    ///
    /// ```
    /// use ptxkit::model::LayerTensor;
    /// use ptxkit::train::decoder::ParamId;
    /// assert_eq!(
    ///     ParamId::LoraA(1, LayerTensor::Q).name(),
    ///     "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"
    /// );
    /// ```
    pub fn name(&self) -> String {
        match self {
            ParamId::Model(t) => t.name(),
            ParamId::LoraA(i, t) => {
                format!(
                    "base_model.model.model.layers.{i}.{}.lora_A.weight",
                    t.module()
                )
            }
            ParamId::LoraB(i, t) => {
                format!(
                    "base_model.model.model.layers.{i}.{}.lora_B.weight",
                    t.module()
                )
            }
        }
    }

    /// Its shape for `cfg` and adapters of `rank`.
    pub fn shape(&self, cfg: &ModelConfig, rank: usize) -> Vec<usize> {
        match self {
            ParamId::Model(t) => t.shape(cfg),
            ParamId::LoraA(_, t) => vec![rank, t.shape(cfg)[1]],
            ParamId::LoraB(_, t) => vec![t.shape(cfg)[0], rank],
        }
    }

    /// Elements.
    pub fn len(&self, cfg: &ModelConfig, rank: usize) -> usize {
        self.shape(cfg, rank).iter().product()
    }

    /// Whether AdamW decays it: matrices yes, norms and biases no.
    pub fn decay(&self) -> bool {
        match self {
            ParamId::Model(t) => t.decay(),
            ParamId::LoraA(..) | ParamId::LoraB(..) => true,
        }
    }
}

/// The trained tensors of `mode`, in flat-layout order.
///
/// ```
/// use ptxkit::model::ModelConfig;
/// use ptxkit::train::decoder::{trainable, Mode};
/// let c = ModelConfig::TINY;
/// assert_eq!(trainable(&c, Mode::Full).len(), ptxkit::model::TensorId::all(&c).len());
/// assert_eq!(trainable(&c, Mode::QLora { rank: 4, alpha: 8.0 }).len(), c.layers * 7 * 2);
/// ```
pub fn trainable(cfg: &ModelConfig, mode: Mode) -> Vec<ParamId> {
    match mode {
        Mode::Full => TensorId::all(cfg).into_iter().map(ParamId::Model).collect(),
        Mode::QLora { .. } => (0..cfg.layers)
            .flat_map(|i| {
                LayerTensor::PROJECTIONS
                    .iter()
                    .flat_map(move |&t| [ParamId::LoraA(i, t), ParamId::LoraB(i, t)])
            })
            .collect(),
    }
}
