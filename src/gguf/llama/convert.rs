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
/// (`cols = 1`).
///
/// ```
/// use ptxkit::gguf::llama::permute_for_rope;
/// // One head of 4 rows: [r0, r1, r2, r3] → [r0, r2, r1, r3].
/// let w = [0.0, 1.0, 2.0, 3.0];
/// assert_eq!(permute_for_rope(&w, 4, 1, 1), vec![0.0, 2.0, 1.0, 3.0]);
/// ```
pub fn permute_for_rope(w: &[f32], rows: usize, cols: usize, heads: usize) -> Vec<f32> {
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
    out
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
pub fn quantize(
    ckpt: &Checkpoint,
    qt: QuantType,
) -> Result<(GgufWriter, Vec<QuantizedTensor>), LlamaError> {
    let cfg = &ckpt.config;
    let mut w = GgufWriter::new();
    metadata::write(&mut w, cfg, qt.file_type())?;
    let mut report = Vec::new();
    for weight in Weight::all(cfg) {
        let name = weight.gguf_name();
        let shape = weight.shape(cfg);
        let values = ckpt.weight(weight);
        let heads = match weight {
            Weight::AttnQ(_) | Weight::AttnQBias(_) => Some(cfg.heads_q),
            Weight::AttnK(_) | Weight::AttnKBias(_) => Some(cfg.heads_kv),
            _ => None,
        };
        let (rows, cols) = match shape[..] {
            [n] => (n, 1),
            [r, c] => (r, c),
            _ => unreachable!("weights are vectors or matrices"),
        };
        let values = match heads {
            Some(h) => permute_for_rope(values, rows, cols, h),
            None => values.to_vec(),
        };
        let ty = tensor_type(
            qt,
            weight,
            shape[shape.len() - 1],
            cfg.layers,
            cfg.tied_embeddings,
        )
        .ok_or_else(|| LlamaError::Unquantizable {
            name: name.clone(),
            cols: shape[shape.len() - 1],
        })?;
        let (ggml_shape, bytes) = match (ty.quant_format(), &shape[..]) {
            (None, _) => (
                shape.iter().rev().map(|&d| d as u64).collect::<Vec<_>>(),
                values.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            (Some(format), &[rows, cols]) => (
                vec![cols as u64, rows as u64],
                GgufMatrix::quantize(format, rows, cols, &values)?
                    .bytes()
                    .to_vec(),
            ),
            (Some(_), _) => unreachable!("only matrices are quantized"),
        };
        report.push(QuantizedTensor {
            name: name.clone(),
            ty,
            bytes: bytes.len(),
        });
        w.add_tensor(&name, &ggml_shape, ty, bytes)?;
    }
    Ok((w, report))
}
