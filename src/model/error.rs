//! What can go wrong building or loading a model.

/// A model that cannot be built from what it was given.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model config: {0}; fix the config (or the checkpoint's config.json) and retry")]
    Config(String),
}
