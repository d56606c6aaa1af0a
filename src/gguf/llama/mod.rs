//! The `llama` architecture in GGUF: a training checkpoint quantized into a file llama.cpp's
//! layout would recognise ([`quantize`]), and the model config read back out of one
//! ([`read_config`]).
//!
//! ```no_run
//! use ptxkit::gguf::llama::{quantize, Checkpoint, QuantType};
//! # fn main() -> Result<(), ptxkit::gguf::llama::LlamaError> {
//! let ckpt = Checkpoint::load(std::path::Path::new("checkpoints/step-300"))?;
//! let (file, tensors) = quantize(&ckpt, QuantType::Q4KM)?;
//! file.write(std::path::Path::new("model.gguf"))?;
//! println!("{} tensors", tensors.len());
//! # Ok(()) }
//! ```

mod checkpoint;
mod convert;
mod error;
mod metadata;
mod mix;
mod names;

#[doc(hidden)]
pub use checkpoint::write_random;
pub use checkpoint::Checkpoint;
pub use convert::{permute_for_rope, quantize, QuantizedTensor};
pub use error::LlamaError;
pub use metadata::{read as read_config, token_texts, write as write_metadata};
pub use mix::{tensor_type, QuantType};
pub use names::Weight;

#[cfg(test)]
mod tests;
