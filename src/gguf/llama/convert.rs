//! A checkpoint to a `llama` GGUF file: names mapped, q/k rows permuted for ggml's RoPE,
//! weights quantized with the reference quantizers of `kernels::quant::gguf`.

use super::checkpoint::Checkpoint;
use super::error::LlamaError;
use super::metadata;
use super::mix::{tensor_type, QuantType};
use super::names::Weight;
use crate::gguf::{GgufWriter, TensorType};
use kernels::quant::gguf::GgufMatrix;

/// Reorders the rows of each head of a q or k projection (`heads` heads of `rows / heads`
/// rows, `cols` columns) from Hugging Face's half-split RoPE pairs `(i, i + d/2)` to ggml's
/// adjacent pairs `(2i, 2i + 1)`: new row `2i + half` of a head is old row
/// `half · d/2 + i`. This is what llama.cpp's converter does for the `llama` architecture,
/// so that its interleaved RoPE computes what `rotate_half` did. Biases permute the same way
/// (`cols = 1`). `None` unless `w` is `rows × cols` and `rows` is `heads` heads of an even
/// size.
///
/// ```
/// use ptxkit::gguf::llama::permute_for_rope;
/// // One head of 4 rows: [r0, r1, r2, r3] → [r0, r2, r1, r3].
/// let w = [0.0, 1.0, 2.0, 3.0];
/// assert_eq!(permute_for_rope(&w, 4, 1, 1), Some(vec![0.0, 2.0, 1.0, 3.0]));
/// assert_eq!(permute_for_rope(&w, 4, 1, 3), None);
/// ```
pub fn permute_for_rope(w: &[f32], rows: usize, cols: usize, heads: usize) -> Option<Vec<f32>> {
    if heads == 0 || !rows.is_multiple_of(2 * heads) || rows.checked_mul(cols) != Some(w.len()) {
        return None;
    }
    let d = rows / heads;
    let mut out = vec![0.0; w.len()];
    for h in 0..heads {
        for i in 0..d / 2 {
            for half in 0..2 {
                let to = h * d + 2 * i + half;
                let from = h * d + half * (d / 2) + i;
                out[to * cols..(to + 1) * cols].copy_from_slice(&w[from * cols..(from + 1) * cols]);
            }
        }
    }
    Some(out)
}

/// What [`quantize`] chose for one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantizedTensor {
    /// The GGUF name.
    pub name: String,
    /// The type it was stored as.
    pub ty: TensorType,
    /// Its bytes in the file.
    pub bytes: usize,
}

/// Builds the GGUF file of `ckpt` quantized as `qt`: the `llama` metadata and tokenizer keys,
/// then every weight under llama.cpp's name with ggml's dimension order (`ne[0]` =
/// in_features), norms and biases in F32, matrices in the types [`tensor_type`] picks.
/// Weights are quantized on every core, and written in llama.cpp's order.
pub fn quantize(
    ckpt: &Checkpoint,
    qt: QuantType,
) -> Result<(GgufWriter, Vec<QuantizedTensor>), LlamaError> {
    let cfg = &ckpt.config;
    let mut w = GgufWriter::new();
    metadata::write(&mut w, cfg, qt.file_type())?;
    let weights = Weight::all(cfg);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut encoded: Vec<Option<Result<Encoded, LlamaError>>> = Vec::new();
    encoded.resize_with(weights.len(), || None);
    let done = std::sync::Mutex::new(encoded);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(weights.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&weight) = weights.get(i) else {
                    break;
                };
                let e = encode(ckpt, qt, weight);
                done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(e);
            });
        }
    });
    let mut report = Vec::with_capacity(weights.len());
    for e in done.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let e = e.expect("every weight was encoded")?;
        report.push(QuantizedTensor {
            name: e.name.clone(),
            ty: e.ty,
            bytes: e.bytes.len(),
        });
        w.add_tensor(&e.name, &e.shape, e.ty, e.bytes)?;
    }
    Ok((w, report))
}

/// One weight as the file stores it.
struct Encoded {
    name: String,
    shape: Vec<u64>,
    ty: TensorType,
    bytes: Vec<u8>,
}

/// Permutes (q and k), picks the type and quantizes one weight.
fn encode(ckpt: &Checkpoint, qt: QuantType, weight: Weight) -> Result<Encoded, LlamaError> {
    let cfg = &ckpt.config;
    let name = weight.gguf_name();
    let shape = weight.shape(cfg);
    // A vector is one row of `len` for the permutation, and `[len]` in the file.
    let (rows, cols) = (shape[0], shape.get(1).copied().unwrap_or(1));
    let heads = match weight {
        Weight::AttnQ(_) | Weight::AttnQBias(_) => Some(cfg.heads_q),
        Weight::AttnK(_) | Weight::AttnKBias(_) => Some(cfg.heads_kv),
        _ => None,
    };
    let values = match heads {
        // A validated config's heads divide the rows into even head sizes.
        Some(h) => permute_for_rope(ckpt.weight(weight), rows, cols, h).ok_or_else(|| {
            LlamaError::Model(crate::model::ModelError::Config(format!(
                "{name}: {rows} rows are not {h} heads of an even size"
            )))
        })?,
        None => ckpt.weight(weight).to_vec(),
    };
    let in_features = shape[shape.len() - 1];
    let ty =
        tensor_type(qt, weight, in_features, cfg.layers, cfg.tied_embeddings).ok_or_else(|| {
            LlamaError::Unquantizable {
                name: name.clone(),
                cols: in_features,
            }
        })?;
    let file_shape: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
    let bytes = match ty.quant_format() {
        None => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Some(format) => GgufMatrix::quantize(format, rows, cols, &values)?
            .bytes()
            .to_vec(),
    };
    Ok(Encoded {
        name,
        shape: file_shape,
        ty,
        bytes,
    })
}
