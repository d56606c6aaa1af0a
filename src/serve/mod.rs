//! The inference engine: a `llama` GGUF model ([`ServeModel`]) served with continuous
//! batching ([`Engine`]) over a paged KV cache.
//!
//! - Prefill: the joining sequences packed into one variable-length batch; the GGUF prefill
//!   GEMM (dequantize, then the library GEMM) for the projections, causal flash attention,
//!   keys and values appended to the paged cache.
//! - Decode: one token for every running sequence a step; the GGUF GEMV with RMSNorm fused
//!   in front for the projections that follow a norm, paged decode attention over the
//!   cache. The step is captured as a graph per batch size class (1, 2, 4, 8, 16) and
//!   replayed after its inputs (tokens, positions, lengths, block table) are copied in.
//! - Sampling: greedy, or temperature with top-k and top-p, from a per-request seed
//!   ([`Sampling`], [`Rng`]), so a request draws the same tokens whatever runs beside it.
//! - [`ReferenceModel`]: the same decoder in f64 on the CPU, which the tests hold the engine
//!   to.
//!
//! RoPE is ggml's adjacent-pair layout ([`kernels::rope::RopeLayout::Interleaved`]), matching
//! the q/k rows `ptxkit quantize` permutes as llama.cpp's converter does.
//!
//! ```
//! use ptxkit::serve::{Engine, EngineConfig, Request, Sampling, ServeModel};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let file = ptxkit::serve::tiny_model_file()?;
//! // `file` is a tiny Q8_0 model: `ptxkit::gguf::Gguf::read("model.gguf")` for a real one.
//! let stream = ptxkit::runtime::Device::emulator().stream()?;
//! let model = ServeModel::load(&stream, &file)?;
//! let mut engine = Engine::new(&stream, &model, EngineConfig::for_model(model.config()))?;
//! let request = Request {
//!     prompt: ptxkit::model::tokenizer::encode(b"hi"),
//!     max_tokens: 3,
//!     sampling: Sampling::GREEDY,
//!     seed: 0,
//!     stop_at_eos: false,
//! };
//! engine.submit(request)?;
//! let done = engine.run()?;
//! assert_eq!(done[0].tokens.len(), 3);
//! assert_eq!(engine.free_pages(), EngineConfig::for_model(model.config()).num_blocks);
//! # Ok(()) }
//! ```

mod engine;
mod error;
mod forward;
mod kv_cache;
mod model;
mod reference;
mod sampling;

pub use engine::{Completion, Engine, EngineConfig, Finish, Request, Stats};
pub use error::ServeError;
pub use model::{Fusion, ServeModel};
pub use reference::ReferenceModel;
pub use sampling::{Rng, Sampling};

/// A tiny random Q8_0 model (the emulator-sized [`ModelConfig::TINY`](crate::model::ModelConfig::TINY)),
/// for the examples in these docs.
#[doc(hidden)]
pub fn tiny_model_file() -> Result<crate::gguf::Gguf, ServeError> {
    let ckpt = crate::gguf::llama::Checkpoint::random(&crate::model::ModelConfig::TINY, 1);
    let (w, _) = crate::gguf::llama::quantize(&ckpt, crate::gguf::llama::QuantType::Q8_0)?;
    Ok(crate::gguf::Gguf::parse(w.to_bytes()?)?)
}

#[cfg(test)]
mod tests;
