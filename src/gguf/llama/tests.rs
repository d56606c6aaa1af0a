//! Quantizing a checkpoint: metadata, names, types, layouts; the q/k permutation against RoPE.

use super::*;
use crate::gguf::{Gguf, TensorType};
use crate::model::{ModelConfig, ModelError};
use kernels::quant::gguf::GgufMatrix;
use kernels::rope::{reference, Rope, RopeLayout};

/// Rows of 256 so the K formats apply, two layers, GQA.
pub(crate) const TEST_MODEL: ModelConfig = ModelConfig {
    hidden: 256,
    heads_q: 4,
    heads_kv: 2,
    ffn: 512,
    ..ModelConfig::TINY
};

fn quantized(cfg: &ModelConfig, qt: QuantType) -> (Checkpoint, Gguf) {
    let dir = tempfile::tempdir().unwrap();
    write_random(dir.path(), cfg, 7).unwrap();
    let ckpt = Checkpoint::load(dir.path()).unwrap();
    let (w, _) = quantize(&ckpt, qt).unwrap();
    let file = Gguf::parse(w.to_bytes().unwrap()).unwrap();
    (ckpt, file)
}

#[test]
fn a_quantized_checkpoint_has_llamas_keys_names_and_q4_k_m_mix() {
    let (_, file) = quantized(&TEST_MODEL, QuantType::Q4KM);
    assert_eq!(file.string("general.architecture").unwrap(), "llama");
    assert_eq!(file.integer("general.file_type").unwrap(), 15);
    assert_eq!(file.integer("llama.attention.head_count_kv").unwrap(), 2);
    assert_eq!(file.integer("llama.rope.dimension_count").unwrap(), 64);
    assert_eq!(file.integer("general.alignment").unwrap(), 32);
    assert_eq!(read_config(&file).unwrap(), TEST_MODEL);
    let ty = |n: &str| file.tensor(n).unwrap().ty;
    assert_eq!(ty("output.weight"), TensorType::Q6K);
    assert_eq!(ty("token_embd.weight"), TensorType::Q4K);
    assert_eq!(ty("blk.0.attn_norm.weight"), TensorType::F32);
    // Two layers: use_more_bits picks layer 1 only.
    assert_eq!(ty("blk.0.attn_v.weight"), TensorType::Q4K);
    assert_eq!(ty("blk.1.attn_v.weight"), TensorType::Q6K);
    assert_eq!(ty("blk.1.ffn_down.weight"), TensorType::Q6K);
    assert_eq!(ty("blk.1.ffn_up.weight"), TensorType::Q4K);
    // ggml order: ne[0] is in_features.
    assert_eq!(
        file.tensor("blk.0.ffn_down.weight").unwrap().shape,
        vec![512, 256]
    );
    assert_eq!(
        file.tensor("blk.0.attn_k.weight").unwrap().shape,
        vec![256, 128]
    );
    assert_eq!(file.tensor("output_norm.weight").unwrap().shape, vec![256]);
}

#[test]
fn quantized_weights_decode_to_the_checkpoints_within_the_formats_error() {
    let (ckpt, file) = quantized(&TEST_MODEL, QuantType::Q8_0);
    let t = file.tensor("blk.1.ffn_gate.weight").unwrap();
    let (rows, cols) = t.matrix().unwrap();
    let q = GgufMatrix::from_bytes(
        t.ty.quant_format().unwrap(),
        rows,
        cols,
        file.tensor_data(&t.name).unwrap().to_vec(),
    )
    .unwrap();
    let want = ckpt.weight(Weight::FfnGate(1));
    let max = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    let err = q
        .dequantize()
        .iter()
        .zip(want)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    // Q8_0 rounds to half a step (1/254 of a block's largest magnitude), and the f16 scale
    // is off by at most 2⁻¹¹ of it, times up to 127 steps.
    assert!(
        err <= max * (1.0 / 254.0 + 1.0 / 2048.0),
        "error {err}, max {max}"
    );
    let norm = file.tensor_data("blk.0.ffn_norm.weight").unwrap();
    let norm: Vec<f32> = norm
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(norm, ckpt.weight(Weight::FfnNorm(0)));
}

#[test]
fn small_widths_fall_back_to_q8_0_and_a_tied_head_writes_no_output() {
    let cfg = ModelConfig {
        tied_embeddings: true,
        qkv_bias: true,
        ..ModelConfig::TINY
    };
    let (_, file) = quantized(&cfg, QuantType::Q4KM);
    assert!(file.tensor("output.weight").is_err());
    assert_eq!(
        file.tensor("token_embd.weight").unwrap().ty,
        TensorType::Q8_0
    );
    assert_eq!(
        file.tensor("blk.0.attn_q.weight").unwrap().ty,
        TensorType::Q8_0
    );
    assert_eq!(
        file.tensor("blk.0.attn_k.bias").unwrap().ty,
        TensorType::F32
    );
    assert_eq!(read_config(&file).unwrap(), cfg);
}

#[test]
fn permuted_rows_under_interleaved_rope_match_half_split_rope() {
    let d = 64;
    let x: Vec<f32> = (0..2 * d)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let neox = Rope {
        layout: RopeLayout::NeoX,
        theta: 10_000.0,
        rotary_dim: d,
    };
    let inter = Rope {
        layout: RopeLayout::Interleaved,
        ..neox
    };
    // Two heads of one token at position 5.
    let hf = reference::rope(&x, &[5], 2, d, neox);
    let ggml = reference::rope(
        &permute_for_rope(&x, 2 * d, 1, 2).unwrap(),
        &[5],
        2,
        d,
        inter,
    );
    let hf32: Vec<f32> = hf.iter().map(|&v| v as f32).collect();
    let want: Vec<f64> = permute_for_rope(&hf32, 2 * d, 1, 2)
        .unwrap()
        .iter()
        .map(|&v| v as f64)
        .collect();
    for (a, b) in ggml.iter().zip(&want) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
}

#[test]
fn a_checkpoint_missing_a_tensor_or_with_a_wrong_shape_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_random(dir.path(), &ModelConfig::TINY, 1).unwrap();
    let cfg_path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    let with = |key: &str, value: u64| {
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json[key] = value.into();
        std::fs::write(&cfg_path, json.to_string()).unwrap();
    };
    with("num_hidden_layers", 3);
    let e = Checkpoint::load(dir.path()).err().unwrap();
    assert!(
        matches!(&e, LlamaError::Model(ModelError::MissingTensor { name, .. }) if name.contains("layers.2")),
        "{e}"
    );
    with("intermediate_size", 512);
    let e = Checkpoint::load(dir.path()).err().unwrap();
    assert!(
        matches!(e, LlamaError::Model(ModelError::TensorShape { .. })),
        "{e}"
    );
}
