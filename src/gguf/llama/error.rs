//! What can go wrong converting a checkpoint to GGUF or reading a `llama` GGUF back.

use crate::gguf::GgufError;
use crate::model::ModelError;

/// A checkpoint that cannot be quantized, or a GGUF file that is not a model this crate runs.
#[derive(Debug, thiserror::Error)]
pub enum LlamaError {
    #[error(
        "checkpoint tensor {name:?} has shape {found:?}, but config.json implies {expected:?}"
    )]
    Shape {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("tensor {name:?} has {cols} input features, not a multiple of 32, so no GGUF quantized type holds its rows; pad the model's widths to multiples of 32")]
    Unquantizable { name: String, cols: usize },
    #[error("tensor {name:?} is {ty}, which `ptxkit generate` does not decode; quantize with `ptxkit quantize --type q4_k_m|q8_0|q6_k`")]
    UnsupportedType { name: String, ty: &'static str },
    #[error("the GGUF file's architecture is {0:?}; only \"llama\" models are served")]
    Architecture(String),
    #[error("the GGUF file's vocabulary is not the byte-level one of ptxkit::model::tokenizer ({0}); quantize a ptxkit checkpoint")]
    Vocabulary(String),
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Kernels(#[from] kernels::Error),
}
