//! GGUF v3, the file format of llama.cpp and ggml: a header, typed metadata, tensor infos,
//! and a data section of aligned tensors, as ggml's `gguf.md` specifies it.
//!
//! - [`Gguf`] is a file read into memory: [`Gguf::read`] / [`Gguf::parse`] check every count,
//!   length, type id, offset and extent (the [`read`] module lists them) and refuse a
//!   malformed file with a [`GgufError`] naming what is wrong.
//! - [`GgufWriter`] builds one; reading what it writes and writing again gives the same bytes.
//! - [`TensorType`] and [`ValueType`] are ggml's type ids as a table.
//!
//! ```
//! use ptxkit::gguf::{Gguf, GgufWriter, TensorType, Value, ValueType};
//! # fn main() -> Result<(), ptxkit::gguf::GgufError> {
//! let mut w = GgufWriter::new();
//! w.set("general.architecture", Value::from("llama"))?;
//! w.set("llama.block_count", Value::U32(2))?;
//! w.set("tokenizer.ggml.tokens", Value::Array(ValueType::String, vec!["a".into(), "b".into()]))?;
//! // A 2 × 32 matrix: ggml lists the fastest dimension (columns) first.
//! w.add_tensor("blk.0.attn_q.weight", &[32, 2], TensorType::Q8_0, vec![0; 2 * 34])?;
//! let file = Gguf::parse(w.to_bytes()?)?;
//! assert_eq!(file.integer("llama.block_count")?, 2);
//! assert_eq!(file.tensor("blk.0.attn_q.weight")?.matrix(), Some((2, 32)));
//! // A file cut short is refused, not misread.
//! let bytes = w.to_bytes()?;
//! assert!(Gguf::parse(bytes[..bytes.len() - 1].to_vec()).is_err());
//! # Ok(()) }
//! ```

mod error;
mod file;
pub mod llama;
pub mod read;
mod types;
mod value;
mod write;

pub use error::GgufError;
pub use file::{Gguf, TensorInfo, DEFAULT_ALIGNMENT, MAX_DIMS, MAX_NAME_BYTES};
pub use types::{TensorType, ValueType};
pub use value::Value;
pub use write::GgufWriter;

#[cfg(test)]
mod tests;
