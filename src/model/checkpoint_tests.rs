//! A checkpoint directory round-trips, and every way of being wrong is an error naming what.

use super::*;
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "ptxkit-ckpt-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn small() -> ModelConfig {
    ModelConfig {
        layers: 1,
        qkv_bias: true,
        ..ModelConfig::TINY
    }
}

fn saved(tag: &str, cfg: &ModelConfig) -> (TempDir, NamedTensors) {
    let dir = TempDir::new(tag);
    let w = init_weights(cfg, 3);
    Checkpoint::save(&dir.0, cfg, &w).unwrap();
    (dir, w)
}

fn rewrite(dir: &Path, edit: impl FnOnce(&mut NamedTensors)) {
    let path = dir.join(Checkpoint::WEIGHTS);
    let mut t = read_safetensors(&path).unwrap();
    edit(&mut t);
    write_safetensors(&path, &t, None).unwrap();
}

#[test]
fn a_saved_checkpoint_loads_back_bit_for_bit_with_its_config() {
    for cfg in [
        small(),
        ModelConfig {
            tied_embeddings: true,
            ..ModelConfig::TINY
        },
    ] {
        let (dir, w) = saved("roundtrip", &cfg);
        let (back, loaded) = Checkpoint::load(&dir.0).unwrap();
        assert_eq!(back, cfg);
        assert_eq!(loaded, w);
        assert_eq!(loaded.contains_key("lm_head.weight"), !cfg.tied_embeddings);
        assert_eq!(
            loaded.contains_key("model.layers.0.self_attn.q_proj.bias"),
            cfg.qkv_bias
        );
    }
}

#[test]
fn config_json_names_qwen2_for_biased_projections_and_llama_otherwise() {
    let qwen = config_to_json(&small());
    assert!(qwen.contains("\"model_type\": \"qwen2\""), "{qwen}");
    let llama = config_to_json(&ModelConfig::TINY);
    for key in [
        "\"model_type\": \"llama\"",
        "\"hidden_size\": 128",
        "\"intermediate_size\": 256",
        "\"num_hidden_layers\": 2",
        "\"num_attention_heads\": 2",
        "\"num_key_value_heads\": 1",
        "\"head_dim\": 64",
        "\"rope_theta\": 10000.0",
        "\"vocab_size\": 260",
        "\"tie_word_embeddings\": false",
        "\"max_position_embeddings\": 32",
    ] {
        assert!(llama.contains(key), "{key} missing from {llama}");
    }
}

#[test]
fn bf16_tensors_are_widened_on_load() {
    let cfg = small();
    let (dir, w) = saved("bf16", &cfg);
    // Rewrite one tensor as BF16 with the safetensors crate directly.
    let path = dir.0.join(Checkpoint::WEIGHTS);
    let t = read_safetensors(&path).unwrap();
    let bf16: Vec<Vec<u8>> = t
        .values()
        .map(|t| {
            t.data
                .iter()
                .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
                .collect()
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = t
        .iter()
        .zip(&bf16)
        .map(|((name, t), bytes)| {
            let view = safetensors::tensor::TensorView::new(
                safetensors::Dtype::BF16,
                t.shape.clone(),
                bytes,
            )
            .unwrap();
            (name.clone(), view)
        })
        .collect();
    std::fs::write(&path, safetensors::serialize(views, None).unwrap()).unwrap();
    let (_, loaded) = Checkpoint::load(&dir.0).unwrap();
    let name = "model.layers.0.mlp.up_proj.weight";
    for (a, b) in loaded[name].data.iter().zip(&w[name].data) {
        assert_eq!(a.to_bits(), b.to_bits() & 0xffff_0000);
    }
}

#[test]
fn a_missing_tensor_is_named() {
    let (dir, _) = saved("missing", &small());
    rewrite(&dir.0, |t| {
        t.remove("model.layers.0.self_attn.k_proj.bias");
    });
    let e = Checkpoint::load(&dir.0).unwrap_err();
    assert!(
        matches!(&e, ModelError::MissingTensor { name, .. } if name == "model.layers.0.self_attn.k_proj.bias"),
        "{e}"
    );
}

#[test]
fn a_misshapen_tensor_is_named_with_both_shapes() {
    let (dir, _) = saved("shape", &small());
    rewrite(&dir.0, |t| {
        t.insert(
            "model.layers.0.mlp.down_proj.weight".into(),
            HostTensor::new(vec![256, 128], vec![0.5; 256 * 128]),
        );
    });
    let e = Checkpoint::load(&dir.0).unwrap_err().to_string();
    assert!(
        e.contains("`model.layers.0.mlp.down_proj.weight` has shape [256, 128] but the config asks for [128, 256]"),
        "{e}"
    );
}

#[test]
fn a_tensor_of_another_dtype_is_named() {
    let (dir, _) = saved("dtype", &small());
    let path = dir.0.join(Checkpoint::WEIGHTS);
    let t = read_safetensors(&path).unwrap();
    let bytes: Vec<Vec<u8>> = t
        .values()
        .map(|t| {
            t.data
                .iter()
                .flat_map(|v| (*v as f64).to_le_bytes())
                .collect()
        })
        .collect();
    let views: Vec<_> = t
        .iter()
        .zip(&bytes)
        .map(|((name, t), b)| {
            let v =
                safetensors::tensor::TensorView::new(safetensors::Dtype::F64, t.shape.clone(), b)
                    .unwrap();
            (name.clone(), v)
        })
        .collect();
    std::fs::write(&path, safetensors::serialize(views, None).unwrap()).unwrap();
    let e = Checkpoint::load(&dir.0).unwrap_err();
    assert!(
        matches!(&e, ModelError::TensorDtype { dtype, .. } if dtype == "F64"),
        "{e}"
    );
    assert!(e.to_string().contains("reads F32 or BF16"), "{e}");
}

#[test]
fn a_truncated_file_names_the_tensor_cut_short() {
    let (dir, _) = saved("truncated", &small());
    let path = dir.0.join(Checkpoint::WEIGHTS);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let e = Checkpoint::load(&dir.0).unwrap_err();
    assert!(matches!(&e, ModelError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("is cut short"), "{e}");
    std::fs::write(&path, &bytes[..4]).unwrap();
    assert!(matches!(
        Checkpoint::load(&dir.0).unwrap_err(),
        ModelError::Safetensors { .. }
    ));
}

#[test]
fn a_config_json_of_another_architecture_is_refused() {
    let (dir, _) = saved("arch", &small());
    let path = dir.0.join(Checkpoint::CONFIG);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("qwen2", "gpt2");
    std::fs::write(&path, text).unwrap();
    let e = Checkpoint::load(&dir.0).unwrap_err();
    assert!(
        matches!(&e, ModelError::ModelType { found, .. } if found == "gpt2"),
        "{e}"
    );
}

#[test]
fn saving_weights_that_do_not_match_the_config_writes_nothing() {
    let dir = TempDir::new("mismatch");
    let cfg = small();
    let mut w = init_weights(&cfg, 1);
    w.remove("model.norm.weight");
    let target = dir.0.join("out");
    let e = Checkpoint::save(&target, &cfg, &w).unwrap_err();
    assert!(e.to_string().contains("model.norm.weight"), "{e}");
    assert!(!target.exists());
}
