//! What can go wrong loading a model or serving requests.

use crate::gguf::llama::LlamaError;
use crate::gguf::GgufError;

/// A model that cannot be loaded, a request that cannot be served, or a device failure.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Model(#[from] LlamaError),
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(transparent)]
    Kernels(#[from] kernels::Error),
    #[error(transparent)]
    Runtime(#[from] kernel_runtime::Error),
    #[error("the prompt is empty; give at least one token")]
    EmptyPrompt,
    #[error("token {token} is not in the vocabulary of {vocab}")]
    TokenOutOfVocabulary { token: u32, vocab: usize },
    #[error("the prompt ({prompt} tokens) plus max_tokens ({max_tokens}) is {} tokens, past the context of {context}; shorten the prompt or ask for fewer tokens", prompt + max_tokens)]
    TooLong {
        prompt: usize,
        max_tokens: usize,
        context: usize,
    },
    #[error("a request needs {needed} KV-cache pages but the cache has only {total}; give the engine more pages or ask for fewer tokens")]
    CacheTooSmall { needed: usize, total: usize },
    #[error("engine config: {0}")]
    Config(String),
    #[error("sampling: {0}")]
    Sampling(String),
}
