//! Which GGUF type each weight gets, following llama.cpp's `llama_tensor_get_type` for the
//! `llama` architecture.
//!
//! What is followed, for the three file types offered:
//! - Norms and biases (1-D tensors) stay F32; llama.cpp quantizes only 2-D weights.
//! - `output.weight` (or `token_embd.weight` when the head is tied and the file has no
//!   `output.weight`) gets Q6_K, or Q8_0 when its rows are not whole blocks of 256; a Q8_0 file
//!   keeps Q8_0.
//! - Q4_K_M: `attn_v` and `ffn_down` get Q6_K in the layers `use_more_bits` picks (the first
//!   and last eighth of the layers and every third one between), Q4_K elsewhere; every other
//!   weight gets Q4_K.
//! - Rows that are not whole blocks of 256 fall back as llama.cpp's `tensor_type_fallback`
//!   does for Q6_K (to Q8_0). For Q4_K llama.cpp falls back to Q5_0, which this crate's kernels
//!   do not decode, so Q4_K falls back to Q8_0 here: more bits, never fewer. Rows that are not
//!   whole blocks of 32 are refused (llama.cpp would store them as F16).

use super::names::Weight;
use crate::gguf::TensorType;

/// The file types `ptxkit quantize` writes (`--type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantType {
    /// llama.cpp's `Q4_K_M`: Q4_K with Q6_K for the head and half of `attn_v`/`ffn_down`.
    Q4KM,
    /// Every weight Q8_0.
    Q8_0,
    /// Every weight Q6_K.
    Q6K,
}

impl QuantType {
    /// Every file type, in the order `--help` lists them.
    pub const ALL: [QuantType; 3] = [QuantType::Q4KM, QuantType::Q8_0, QuantType::Q6K];

    /// The name on the command line (`q4_k_m`, `q8_0`, `q6_k`).
    ///
    /// ```
    /// use ptxkit::gguf::llama::QuantType;
    /// assert_eq!(QuantType::parse("q4_k_m"), Some(QuantType::Q4KM));
    /// assert_eq!(QuantType::Q6K.name(), "q6_k");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Q4KM => "q4_k_m",
            QuantType::Q8_0 => "q8_0",
            QuantType::Q6K => "q6_k",
        }
    }

    /// The type named `name` (case-insensitive).
    pub fn parse(name: &str) -> Option<QuantType> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// llama.cpp's `general.file_type` (`LLAMA_FTYPE_MOSTLY_*`).
    pub fn file_type(self) -> u32 {
        match self {
            QuantType::Q8_0 => 7,
            QuantType::Q4KM => 15,
            QuantType::Q6K => 18,
        }
    }

    fn default_type(self) -> TensorType {
        match self {
            QuantType::Q4KM => TensorType::Q4K,
            QuantType::Q8_0 => TensorType::Q8_0,
            QuantType::Q6K => TensorType::Q6K,
        }
    }
}

/// llama.cpp's layer choice for the extra bits of Q4_K_M.
fn use_more_bits(layer: usize, layers: usize) -> bool {
    layer < layers / 8 || layer >= 7 * layers / 8 || (layer as i64 - (layers / 8) as i64) % 3 == 2
}

/// The type of weight `w` (with `cols` input features) in a `qt` file of a model with
/// `layers` blocks whose head is `tied` to the embedding; `None` when no quantized type
/// holds rows of `cols` (not a multiple of 32).
///
/// ```
/// use ptxkit::gguf::llama::{tensor_type, QuantType, Weight};
/// use ptxkit::gguf::TensorType;
/// assert_eq!(tensor_type(QuantType::Q4KM, Weight::Output, 4096, 32, false), Some(TensorType::Q6K));
/// assert_eq!(tensor_type(QuantType::Q4KM, Weight::AttnQ(5), 4096, 32, false), Some(TensorType::Q4K));
/// assert_eq!(tensor_type(QuantType::Q4KM, Weight::AttnV(0), 4096, 32, false), Some(TensorType::Q6K));
/// // Rows of 128 are not whole Q4_K blocks: Q8_0 instead.
/// assert_eq!(tensor_type(QuantType::Q4KM, Weight::AttnQ(5), 128, 32, false), Some(TensorType::Q8_0));
/// ```
pub fn tensor_type(
    qt: QuantType,
    w: Weight,
    cols: usize,
    layers: usize,
    tied: bool,
) -> Option<TensorType> {
    if w.is_vector() {
        return Some(TensorType::F32);
    }
    let default = qt.default_type();
    let head = matches!(w, Weight::Output) || (tied && matches!(w, Weight::TokenEmbd));
    let chosen = if head {
        if !cols.is_multiple_of(default.block_len() as usize) || default == TensorType::Q8_0 {
            TensorType::Q8_0
        } else {
            TensorType::Q6K
        }
    } else {
        match (qt, w) {
            (QuantType::Q4KM, Weight::AttnV(i) | Weight::FfnDown(i))
                if use_more_bits(i, layers) =>
            {
                TensorType::Q6K
            }
            _ => default,
        }
    };
    let fallen = if cols.is_multiple_of(chosen.block_len() as usize) {
        chosen
    } else {
        TensorType::Q8_0
    };
    cols.is_multiple_of(fallen.block_len() as usize)
        .then_some(fallen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_k_m_gives_q6_k_to_the_layers_llama_cpp_picks() {
        // 32 layers: 0..4, 28..32 and every third from 6.
        let picked: Vec<usize> = (0..32)
            .filter(|&i| {
                tensor_type(QuantType::Q4KM, Weight::FfnDown(i), 4096, 32, false)
                    == Some(TensorType::Q6K)
            })
            .collect();
        assert_eq!(
            picked,
            vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
        for i in 0..32 {
            assert_eq!(
                tensor_type(QuantType::Q4KM, Weight::FfnGate(i), 4096, 32, false),
                Some(TensorType::Q4K)
            );
        }
    }

    #[test]
    fn the_tied_embedding_takes_the_heads_type_and_norms_stay_f32() {
        let t = |w, tied| tensor_type(QuantType::Q4KM, w, 512, 4, tied);
        assert_eq!(t(Weight::TokenEmbd, true), Some(TensorType::Q6K));
        assert_eq!(t(Weight::TokenEmbd, false), Some(TensorType::Q4K));
        assert_eq!(t(Weight::AttnNorm(0), false), Some(TensorType::F32));
        assert_eq!(
            tensor_type(QuantType::Q8_0, Weight::Output, 512, 4, false),
            Some(TensorType::Q8_0)
        );
        assert_eq!(
            tensor_type(QuantType::Q6K, Weight::FfnUp(1), 96, 4, false),
            Some(TensorType::Q8_0)
        );
        assert_eq!(
            tensor_type(QuantType::Q6K, Weight::FfnUp(1), 100, 4, false),
            None
        );
    }
}
