//! The decoder model: a Llama/Qwen2-style architecture shared by `ptxkit train` (safetensors
//! checkpoints) and `ptxkit generate` (GGUF files).
//!
//! The files: `config.rs` (the sizes), `names.rs` (every tensor, its Hugging Face name and
//! shape), `init.rs` (starting weights), `safetensors_io.rs` and `hf_config.rs` (the two
//! files of a checkpoint), `checkpoint.rs` (a checkpoint directory), `tokenizer.rs`.

mod checkpoint;
mod config;
mod error;
mod hf_config;
mod init;
mod names;
mod safetensors_io;
pub mod tokenizer;

pub use checkpoint::Checkpoint;
pub use config::ModelConfig;
pub use error::ModelError;
pub use hf_config::{config_from_json, config_to_json};
pub use init::{init_weights, INIT_STD};
pub use names::{LayerTensor, TensorId};
pub use safetensors_io::{read_safetensors, write_safetensors, HostTensor, NamedTensors};

#[cfg(test)]
mod checkpoint_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid() {
        ModelConfig::TINY.validate().unwrap();
        ModelConfig::SMALL.validate().unwrap();
    }

    #[test]
    fn a_kv_head_count_that_does_not_divide_the_query_heads_is_refused() {
        let c = ModelConfig {
            heads_kv: 3,
            ..ModelConfig::TINY
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("multiple of heads_kv (3)"), "{e}");
    }

    #[test]
    fn parameter_count_counts_an_untied_head() {
        let tied = ModelConfig {
            tied_embeddings: true,
            ..ModelConfig::TINY
        };
        let untied = ModelConfig::TINY;
        assert_eq!(
            untied.parameter_count() - tied.parameter_count(),
            untied.vocab * untied.hidden
        );
    }
}
