//! The `llama` architecture's metadata keys and the byte-level tokenizer's, written from a
//! [`ModelConfig`] and read back into one.

use super::error::LlamaError;
use super::names::Weight;
use crate::gguf::{Gguf, GgufWriter, Value, ValueType};
use crate::model::{tokenizer, ModelConfig};

/// Token types of llama.cpp's vocabulary (`LLAMA_TOKEN_TYPE_*`).
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_BYTE: i32 = 6;
const TOKEN_TYPE_UNUSED: i32 = 5;

/// The vocabulary's token texts: llama.cpp's byte tokens `<0x00>`..`<0xFF>`, then the
/// specials.
///
/// ```
/// let t = ptxkit::gguf::llama::token_texts();
/// assert_eq!((t[10].as_str(), t[256].as_str(), t.len()), ("<0x0A>", "<s>", 260));
/// ```
pub fn token_texts() -> Vec<String> {
    let mut t: Vec<String> = (0..256).map(|b| format!("<0x{b:02X}>")).collect();
    for s in [
        tokenizer::BOS,
        tokenizer::EOS,
        tokenizer::PAD,
        tokenizer::UNUSED,
    ] {
        t.push(tokenizer::special_name(s).expect("a special").to_owned());
    }
    t
}

/// Sets every metadata key of a `llama` model of `cfg` quantized as `file_type`.
///
/// ```
/// use ptxkit::gguf::{llama, Gguf, GgufWriter};
/// use ptxkit::model::ModelConfig;
/// # fn main() -> Result<(), llama::LlamaError> {
/// let mut w = GgufWriter::new();
/// llama::write_metadata(&mut w, &ModelConfig::TINY, 15)?;
/// let file = Gguf::parse(w.to_bytes()?)?;
/// assert_eq!(file.integer("llama.embedding_length")?, 128);
/// # Ok(()) }
/// ```
pub fn write(w: &mut GgufWriter, cfg: &ModelConfig, file_type: u32) -> Result<(), LlamaError> {
    let u32v = |x: usize| Value::U32(x as u32);
    let kv: Vec<(&str, Value)> = vec![
        ("general.architecture", "llama".into()),
        ("general.name", "ptxkit".into()),
        ("general.file_type", Value::U32(file_type)),
        ("general.quantization_version", Value::U32(2)),
        ("general.alignment", Value::U32(32)),
        ("llama.vocab_size", u32v(cfg.vocab)),
        ("llama.context_length", u32v(cfg.max_seq)),
        ("llama.embedding_length", u32v(cfg.hidden)),
        ("llama.block_count", u32v(cfg.layers)),
        ("llama.feed_forward_length", u32v(cfg.ffn)),
        ("llama.attention.head_count", u32v(cfg.heads_q)),
        ("llama.attention.head_count_kv", u32v(cfg.heads_kv)),
        ("llama.attention.key_length", u32v(cfg.head_dim)),
        ("llama.attention.value_length", u32v(cfg.head_dim)),
        ("llama.rope.freq_base", Value::F32(cfg.rope_theta)),
        ("llama.rope.dimension_count", u32v(cfg.head_dim)),
        (
            "llama.attention.layer_norm_rms_epsilon",
            Value::F32(cfg.norm_eps),
        ),
        ("tokenizer.ggml.model", "llama".into()),
        (
            "tokenizer.ggml.tokens",
            Value::Array(
                ValueType::String,
                token_texts().into_iter().map(Value::String).collect(),
            ),
        ),
        (
            "tokenizer.ggml.scores",
            Value::Array(ValueType::F32, vec![Value::F32(0.0); tokenizer::VOCAB]),
        ),
        (
            "tokenizer.ggml.token_type",
            Value::Array(
                ValueType::I32,
                (0..tokenizer::VOCAB as u32)
                    .map(|t| {
                        Value::I32(match t {
                            0..=255 => TOKEN_TYPE_BYTE,
                            tokenizer::UNUSED => TOKEN_TYPE_UNUSED,
                            _ => TOKEN_TYPE_CONTROL,
                        })
                    })
                    .collect(),
            ),
        ),
        ("tokenizer.ggml.bos_token_id", Value::U32(tokenizer::BOS)),
        ("tokenizer.ggml.eos_token_id", Value::U32(tokenizer::EOS)),
        (
            "tokenizer.ggml.padding_token_id",
            Value::U32(tokenizer::PAD),
        ),
        ("tokenizer.ggml.add_bos_token", Value::Bool(true)),
        ("tokenizer.ggml.add_eos_token", Value::Bool(false)),
        ("tokenizer.ggml.add_space_prefix", Value::Bool(false)),
    ];
    for (k, v) in kv {
        w.set(k, v)?;
    }
    Ok(())
}

/// The model a `llama` GGUF file describes: its sizes from the `llama.*` keys, Qwen2-style
/// biases when `blk.0.attn_q.bias` is present, a tied head when `output.weight` is absent.
/// Refuses another architecture or a vocabulary other than the byte-level one.
///
/// ```
/// use ptxkit::gguf::{llama, Gguf, GgufWriter, Value};
/// # fn main() -> Result<(), llama::LlamaError> {
/// let mut w = GgufWriter::new();
/// w.set("general.architecture", Value::from("gpt2"))?;
/// let e = llama::read_config(&Gguf::parse(w.to_bytes()?)?).unwrap_err();
/// assert!(matches!(e, llama::LlamaError::Architecture(a) if a == "gpt2"));
/// # Ok(()) }
/// ```
pub fn read(file: &Gguf) -> Result<ModelConfig, LlamaError> {
    let arch = file.string("general.architecture")?;
    if arch != "llama" {
        return Err(LlamaError::Architecture(arch.to_owned()));
    }
    let int = |k: &str| -> Result<usize, LlamaError> {
        let v = file.integer(k)?;
        usize::try_from(v).map_err(|_| {
            LlamaError::Model(crate::model::ModelError::Config(format!(
                "{k} = {v} is too large"
            )))
        })
    };
    let hidden = int("llama.embedding_length")?;
    let heads_q = int("llama.attention.head_count")?;
    let tokens = match file.get("tokenizer.ggml.tokens") {
        Some(Value::Array(ValueType::String, t)) => t,
        _ => {
            return Err(LlamaError::Vocabulary(
                "tokenizer.ggml.tokens is missing or not a string array".into(),
            ))
        }
    };
    let expected = token_texts();
    if tokens.len() != expected.len()
        || tokens
            .iter()
            .zip(&expected)
            .any(|(t, e)| t.as_str() != Some(e))
    {
        return Err(LlamaError::Vocabulary(format!(
            "{} tokens, not the {} byte and special tokens",
            tokens.len(),
            expected.len()
        )));
    }
    let head_dim = match file.get("llama.rope.dimension_count") {
        Some(_) => int("llama.rope.dimension_count")?,
        None => hidden / heads_q.max(1),
    };
    let cfg = ModelConfig {
        vocab: tokens.len(),
        hidden,
        layers: int("llama.block_count")?,
        heads_q,
        heads_kv: match file.get("llama.attention.head_count_kv") {
            Some(_) => int("llama.attention.head_count_kv")?,
            None => heads_q,
        },
        head_dim,
        ffn: int("llama.feed_forward_length")?,
        rope_theta: file.float("llama.rope.freq_base")? as f32,
        norm_eps: file.float("llama.attention.layer_norm_rms_epsilon")? as f32,
        tied_embeddings: file.tensor(&Weight::Output.gguf_name()).is_err(),
        qkv_bias: file.tensor(&Weight::AttnQBias(0).gguf_name()).is_ok(),
        max_seq: int("llama.context_length")?,
    };
    cfg.validate()?;
    Ok(cfg)
}
