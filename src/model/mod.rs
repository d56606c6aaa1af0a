//! The decoder model: a Llama/Qwen2-style architecture shared by `ptxkit train` (safetensors
//! checkpoints) and `ptxkit generate` (GGUF files).

mod config;
mod error;
pub mod tokenizer;

pub use config::ModelConfig;
pub use error::ModelError;

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
