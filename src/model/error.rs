//! What can go wrong building or loading a model.

use std::path::PathBuf;

/// A model that cannot be built from what it was given, or a checkpoint that cannot be read
/// or written.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model config: {0}; fix the config (or the checkpoint's config.json) and retry")]
    Config(String),
    #[error("{}: {source}; check that the path exists and is readable (or writable)", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a config.json this model reads: {detail}; write a Hugging Face Llama or Qwen2 config", path.display())]
    ConfigJson { path: PathBuf, detail: String },
    #[error("{}: model_type \"{found}\" is not one this decoder implements; use \"llama\" or \"qwen2\"", path.display())]
    ModelType { path: PathBuf, found: String },
    #[error("{}: not a safetensors file: {detail}; re-save the checkpoint", path.display())]
    Safetensors { path: PathBuf, detail: String },
    #[error("{}: tensor `{name}` is cut short: its data ends at byte {needed} but the file holds {have} bytes of data; the file is truncated, copy or save it again", path.display())]
    Truncated {
        path: PathBuf,
        name: String,
        needed: usize,
        have: usize,
    },
    #[error("{}: tensor `{name}` is missing; the checkpoint does not match its config.json (save it again, or fix the config)", path.display())]
    MissingTensor { path: PathBuf, name: String },
    #[error("{}: tensor `{name}` has shape {actual:?} but the config asks for {expected:?}; the checkpoint does not match its config.json", path.display())]
    TensorShape {
        path: PathBuf,
        name: String,
        expected: Vec<usize>,
        actual: Vec<usize>,
    },
    #[error("{}: tensor `{name}` is stored as {dtype}; this loader reads F32 or BF16, convert the checkpoint to one of them", path.display())]
    TensorDtype {
        path: PathBuf,
        name: String,
        dtype: String,
    },
}

impl ModelError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ModelError {
        ModelError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
