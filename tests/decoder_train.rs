//! The decoder trains on the emulator, in TF32 and in bf16: its first step matches the CPU f64
//! reference, its loss falls, a resumed run continues the same trajectory, and QLoRA trains
//! the adapters while the base stays frozen.

use kernel_runtime::Device;
use ptxkit::model::read_safetensors;
use ptxkit::train::decoder::{
    compare_decoder_with_reference, Corpus, DecoderConfig, DecoderTrainer, Mode, Precision,
    ADAPTER, OPTIMIZER,
};
use ptxkit::train::Launch;
use std::path::PathBuf;

/// Two windows of 32 tokens of [`ModelConfig::TINY`](ptxkit::model::ModelConfig::TINY), in
/// TF32 (the bf16 tests say so).
fn tiny() -> DecoderConfig {
    DecoderConfig {
        precision: Precision::Tf32,
        ..DecoderConfig::tiny()
    }
}

/// One layer of one 64-wide head: an eighth of [`tiny`]'s work, for the tests that only
/// need a decoder to train.
fn micro() -> DecoderConfig {
    let model = ptxkit::model::ModelConfig {
        hidden: 64,
        layers: 1,
        heads_q: 1,
        heads_kv: 1,
        ffn: 128,
        ..ptxkit::model::ModelConfig::TINY
    };
    DecoderConfig {
        model,
        seqs: 1,
        ..tiny()
    }
}

/// A text of the tests' own for the assertions that depend on what the batches hold (that
/// the loss falls within a few steps): the builtin corpus is the project's docs, so editing
/// them would change those outcomes.
fn fixed_corpus() -> Corpus {
    const TEXT: &str = "A kernel is a function that many threads run at once. Each thread \
        reads its inputs, works in registers and writes its outputs. Blocks of threads share \
        memory on the chip, and a grid of blocks covers the whole problem. ";
    Corpus::from_bytes(TEXT.repeat(8).as_bytes())
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ptxkit-decoder-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn losses(trainer: &mut DecoderTrainer, steps: u32) -> Vec<u32> {
    (0..steps)
        .map(|_| {
            trainer.step().unwrap();
            trainer.loss().unwrap().to_bits()
        })
        .collect()
}

#[test]
fn decoder_first_step_matches_the_f64_reference_and_the_loss_falls() {
    let device = Device::emulator();
    let mut trainer = DecoderTrainer::new(&device, &tiny(), fixed_corpus(), Launch::Graph).unwrap();
    let checks = compare_decoder_with_reference(&mut trainer, 1).unwrap();
    if let Some(bad) = checks.iter().find(|c| !c.passed()) {
        panic!("{}", bad.to_error());
    }
    let first = checks[0].device;
    assert_eq!(checks[0].quantity, "loss");
    for _ in 0..3 {
        trainer.step().unwrap();
    }
    let last = trainer.loss().unwrap() as f64;
    assert!(
        last < first - 0.3,
        "the loss fell only from {first} to {last} in 4 steps"
    );
}

#[test]
fn a_qwen2_style_decoder_with_qkv_biases_and_tied_embeddings_matches_the_reference() {
    let device = Device::emulator();
    let mut cfg = micro();
    cfg.model.qkv_bias = true;
    cfg.model.tied_embeddings = true;
    let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    if let Some(bad) = checks.iter().find(|c| !c.passed()) {
        panic!("{}", bad.to_error());
    }
    for name in [
        "|d model.layers.0.self_attn.k_proj.bias|",
        "|d model.embed_tokens.weight|",
    ] {
        let c = checks.iter().find(|c| c.quantity == name).unwrap();
        assert!(c.reference > 0.0, "{name} is zero");
    }
    assert!(!checks.iter().any(|c| c.quantity.contains("lm_head")));
}

#[test]
fn a_resumed_decoder_run_takes_the_same_steps_as_an_uninterrupted_one() {
    let device = Device::emulator();
    let cfg = micro();
    let mut whole = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let want = losses(&mut whole, 4);

    let dir = temp_dir("resume");
    let device = Device::emulator();
    let mut first = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let mut got = losses(&mut first, 2);
    first.save(&dir).unwrap();
    assert!(dir.join(OPTIMIZER).exists());
    let device = Device::emulator();
    let mut resumed =
        DecoderTrainer::resume(&device, &cfg, Corpus::builtin(), Launch::Graph, &dir).unwrap();
    assert_eq!(resumed.steps_done(), 2);
    got.extend(losses(&mut resumed, 2));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        got, want,
        "loss bits per step, resumed after 2 vs uninterrupted"
    );
}

#[test]
fn a_single_rank_of_a_data_parallel_run_takes_the_steps_of_a_plain_run() {
    let cfg = micro();
    let device = Device::emulator();
    let mut plain = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let want = losses(&mut plain, 2);
    let device = Device::emulator();
    let comm = kernel_runtime::Communicator::single(&device).unwrap();
    let mut rank = DecoderTrainer::for_rank(comm, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    assert_eq!(losses(&mut rank, 2), want);
    assert_eq!(rank.weight_bits().unwrap(), plain.weight_bits().unwrap());
}

#[test]
fn qlora_trains_the_adapters_and_leaves_the_base_frozen() {
    let device = Device::emulator();
    let cfg = DecoderConfig {
        mode: Mode::QLora {
            rank: 4,
            alpha: 8.0,
        },
        adamw: kernels::optim::AdamWConfig {
            lr: 1e-2,
            ..tiny().adamw
        },
        ..micro()
    };
    let mut trainer = DecoderTrainer::new(&device, &cfg, fixed_corpus(), Launch::Graph).unwrap();
    let seen: Vec<f32> = losses(&mut trainer, 5)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    assert!(
        seen[4] < seen[0] - 0.05,
        "the QLoRA loss did not fall: {seen:?}"
    );
    assert_eq!(trainer.changed_frozen().unwrap(), Vec::<String>::new());
    let dir = temp_dir("qlora");
    trainer.save(&dir).unwrap();
    let adapters = read_safetensors(&dir.join(ADAPTER)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let a = &adapters["base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"];
    assert_eq!(a.shape, vec![4, cfg.model.ffn]);
    let b = &adapters["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"];
    assert_eq!(b.shape, vec![cfg.model.hidden, 4]);
    assert!(b.data.iter().any(|&x| x != 0.0), "lora_B never moved");
    assert_eq!(adapters.len(), cfg.model.layers * 7 * 2);
}

/// [`micro`] in bf16.
fn micro_bf16() -> DecoderConfig {
    DecoderConfig {
        precision: Precision::Bf16,
        ..micro()
    }
}

fn qlora(cfg: DecoderConfig) -> DecoderConfig {
    DecoderConfig {
        mode: Mode::QLora {
            rank: 4,
            alpha: 8.0,
        },
        adamw: kernels::optim::AdamWConfig {
            lr: 1e-2,
            ..cfg.adamw
        },
        ..cfg
    }
}

#[test]
fn bf16_decoder_first_steps_match_the_bf16_rounded_f64_reference_and_the_loss_falls() {
    let device = Device::emulator();
    let cfg = DecoderConfig {
        precision: Precision::Bf16,
        ..tiny()
    };
    let mut trainer = DecoderTrainer::new(&device, &cfg, fixed_corpus(), Launch::Graph).unwrap();
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    for c in &checks {
        println!("{} {:<56} {:.2e}", c.step, c.quantity, c.rel_error());
    }
    if let Some(bad) = checks.iter().find(|c| !c.passed()) {
        panic!("{}", bad.to_error());
    }
    let first = checks[0].device;
    for _ in 0..2 {
        trainer.step().unwrap();
    }
    let last = trainer.loss().unwrap() as f64;
    assert!(
        last < first - 0.3,
        "the bf16 loss fell only from {first} to {last} in 4 steps"
    );
}

#[test]
fn a_qwen2_style_decoder_in_bf16_matches_the_reference() {
    let device = Device::emulator();
    let mut cfg = micro_bf16();
    cfg.model.qkv_bias = true;
    cfg.model.tied_embeddings = true;
    let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    if let Some(bad) = checks.iter().find(|c| !c.passed()) {
        panic!("{}", bad.to_error());
    }
    let c = checks
        .iter()
        .find(|c| c.quantity == "|d model.layers.0.self_attn.k_proj.bias|")
        .unwrap();
    assert!(c.reference > 0.0, "the k bias's gradient is zero");
}

#[test]
fn a_resumed_bf16_decoder_run_takes_the_same_steps_as_an_uninterrupted_one() {
    let cfg = micro_bf16();
    let device = Device::emulator();
    let mut whole = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    let want = losses(&mut whole, 4);

    let dir = temp_dir("resume-bf16");
    let device = Device::emulator();
    let mut first = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Direct).unwrap();
    let mut got = losses(&mut first, 2);
    first.save(&dir).unwrap();
    let device = Device::emulator();
    let mut resumed =
        DecoderTrainer::resume(&device, &cfg, Corpus::builtin(), Launch::Graph, &dir).unwrap();
    got.extend(losses(&mut resumed, 2));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        got, want,
        "loss bits per step: direct launches, then resumed after 2, vs one graph-replayed run"
    );
    assert_eq!(resumed.weight_bits().unwrap(), whole.weight_bits().unwrap());
}

#[test]
fn qlora_in_bf16_matches_the_bf16_rounded_f64_reference() {
    let device = Device::emulator();
    // At the tiny model's learning rate, which the weight tolerance's derivation assumes.
    let mut cfg = DecoderConfig {
        adamw: micro_bf16().adamw,
        ..qlora(micro_bf16())
    };
    cfg.model.qkv_bias = true;
    let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    // B starts at zero, which zeroes A's gradient: the second step has both live.
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    if let Some(bad) = checks.iter().find(|c| !c.passed()) {
        panic!("{}", bad.to_error());
    }
    let name = "|d base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight|";
    let c = checks
        .iter()
        .find(|c| c.step == 2 && c.quantity == name)
        .unwrap();
    assert!(c.reference > 0.0, "{name} is zero at step 2");
}

#[test]
fn qlora_in_bf16_trains_the_adapters_in_fewer_launches_and_leaves_the_base_frozen() {
    let device = Device::emulator();
    let tf32 = DecoderTrainer::new(&device, &qlora(micro()), fixed_corpus(), Launch::Graph)
        .unwrap()
        .graph_launches()
        .unwrap();
    let cfg = qlora(micro_bf16());
    let device = Device::emulator();
    let mut trainer = DecoderTrainer::new(&device, &cfg, fixed_corpus(), Launch::Graph).unwrap();
    let bf16 = trainer.graph_launches().unwrap();
    // The f32 NF4 products launch once per 16 rows; bf16's run on the tensor cores in one.
    assert!(bf16 < tf32, "bf16 step: {bf16} launches, tf32: {tf32}");
    let seen: Vec<f32> = losses(&mut trainer, 5)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    assert!(
        seen[4] < seen[0] - 0.05,
        "the bf16 QLoRA loss did not fall: {seen:?}"
    );
    assert_eq!(trainer.changed_frozen().unwrap(), Vec::<String>::new());
    let adapters = trainer.trained().unwrap();
    let b = &adapters["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"];
    assert!(b.data.iter().any(|&x| x != 0.0), "lora_B never moved");
}
