//! The engine on the emulator against the f64 reference: logits, the greedy path, seeded
//! sampling, and a sequence joining a running batch.

use super::forward::{prefill, PrefillBatch};
use super::kv_cache::PagedKvCache;
use super::*;
use crate::gguf::llama::{quantize, Checkpoint, QuantType};
use crate::gguf::Gguf;
use crate::model::{tokenizer, ModelConfig};
use kernel_runtime::{Device, Stream};

/// Rows of 256, so Q4_K_M uses its K formats; two layers, GQA.
const TEST_MODEL: ModelConfig = ModelConfig {
    hidden: 256,
    heads_q: 4,
    heads_kv: 2,
    ffn: 512,
    ..ModelConfig::TINY
};

fn files(cfg: &ModelConfig, qt: QuantType) -> (Checkpoint, Gguf) {
    let ckpt = Checkpoint::random(cfg, 11);
    let (w, _) = quantize(&ckpt, qt).unwrap();
    (ckpt, Gguf::parse(w.to_bytes().unwrap()).unwrap())
}

fn stream() -> Stream {
    Device::emulator().stream().unwrap()
}

fn request(prompt: &[u8], max_tokens: usize, sampling: Sampling, seed: u64) -> Request {
    Request {
        prompt: tokenizer::encode(prompt),
        max_tokens,
        sampling,
        seed,
        stop_at_eos: false,
    }
}

fn max_abs_diff(a: &[f32], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0, |m, (&x, &y)| m.max((f64::from(x) - y).abs()))
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// The last prompt token's logits from the device prefill, the f64 forward of the
/// dequantized file, and the f64 forward of the unquantized checkpoint.
fn last_logits(qt: QuantType) -> (Vec<f32>, Vec<f64>, Vec<f64>) {
    let (ckpt, file) = files(&TEST_MODEL, qt);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    let prompt = tokenizer::encode(b"paged!");
    let mut cache = PagedKvCache::new(&s, TEST_MODEL.layers, 4, 16, TEST_MODEL.kv_width()).unwrap();
    let batch = PrefillBatch {
        tokens: prompt.clone(),
        cu_seqlens: vec![0, prompt.len() as u32],
        table: vec![0, 1],
        blocks_per_seq: 2,
    };
    let device = prefill(&s, &model, &mut cache, &batch).unwrap();
    let last = |mut rows: Vec<Vec<f64>>| rows.pop().unwrap();
    (
        device,
        last(ReferenceModel::from_gguf(&file).unwrap().logits(&prompt)),
        last(ReferenceModel::from_checkpoint(&ckpt).logits(&prompt)),
    )
}

#[test]
fn prefill_logits_match_the_f64_forward_of_the_checkpoint_within_quantization_error() {
    for (qt, quant_bound) in [(QuantType::Q8_0, 0.02), (QuantType::Q4KM, 0.25)] {
        let (device, dequantized, exact) = last_logits(qt);
        let scale = max_abs(&exact);
        let bf16 = max_abs_diff(&device, &dequantized);
        let to_exact = max_abs_diff(&device, &exact);
        let quant = dequantized
            .iter()
            .zip(&exact)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        // The device differs from the dequantized file's forward only by rounding q, k and v
        // to bf16 for attention.
        assert!(
            bf16 < 1e-2 * scale,
            "{qt:?}: {bf16} vs logits up to {scale}"
        );
        // From the unquantized checkpoint it differs by the quantization's own error (the
        // dequantized forward's) plus that rounding. Q8_0 keeps it small, so a wrong q/k
        // permutation or RoPE pairing, which moves logits by their own size, cannot pass.
        assert!(
            to_exact <= quant + 1e-2 * scale,
            "{qt:?}: {to_exact} vs {quant}"
        );
        assert!(
            quant < quant_bound * scale,
            "{qt:?}: {quant} vs logits up to {scale}"
        );
    }
}

#[test]
fn greedy_generation_follows_the_f64_references_argmax_path() {
    // The tiny model's Q8_0 rows of 128 decode through the f32-route GEMV (its rows of 256
    // through the tensor-core GEMV); the test model's rows of 256 and 512 all take the
    // tensor-core GEMV, each residual add writing the next norm in the same launch.
    greedy_follows_the_reference(&ModelConfig::TINY, QuantType::Q8_0);
    greedy_follows_the_reference(&TEST_MODEL, QuantType::Q4KM);
}

fn greedy_follows_the_reference(cfg: &ModelConfig, qt: QuantType) {
    let (_, file) = files(cfg, qt);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    let mut engine = Engine::new(&s, &model, EngineConfig::for_model(model.config())).unwrap();
    engine
        .submit(request(b"The cat", 5, Sampling::GREEDY, 0))
        .unwrap();
    let done = engine.run().unwrap();
    let want = ReferenceModel::from_gguf(&file)
        .unwrap()
        .greedy(&tokenizer::encode(b"The cat"), 5);
    assert_eq!(done[0].tokens, want, "{qt:?}");
    assert_eq!(done[0].finish, Finish::MaxTokens);
    // One decode graph (batch class 1), replayed for the later steps.
    assert_eq!(engine.stats().graphs_captured, 1);
    assert_eq!(engine.stats().decode_steps, 4);
}

#[test]
fn the_same_seed_samples_the_same_tokens_and_another_seed_others() {
    let (_, file) = files(&ModelConfig::TINY, QuantType::Q8_0);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    let sampling = Sampling {
        temperature: 1.5,
        top_k: 100,
        top_p: 0.95,
    };
    let run = |seed: u64| {
        let mut engine = Engine::new(&s, &model, EngineConfig::for_model(model.config())).unwrap();
        engine.submit(request(b"seed", 4, sampling, seed)).unwrap();
        engine.run().unwrap().remove(0).tokens
    };
    let a = run(5);
    assert_eq!(a, run(5));
    assert_ne!(a, run(6));
}

#[test]
fn a_sequence_joining_mid_way_gets_the_tokens_it_gets_alone_and_pages_are_reused() {
    joining_mid_way(&ModelConfig::TINY, QuantType::Q8_0);
    joining_mid_way(&TEST_MODEL, QuantType::Q4KM);
}

fn joining_mid_way(model_cfg: &ModelConfig, qt: QuantType) {
    let (_, file) = files(model_cfg, qt);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    let cfg = EngineConfig {
        max_batch: 2,
        block_size: 4,
        num_blocks: 6,
        max_context: 16,
        decode_splits: None,
    };
    let sampled = Sampling {
        temperature: 0.8,
        top_k: 20,
        top_p: 1.0,
    };
    let a = request(b"first", 6, Sampling::GREEDY, 1);
    let b = request(b"second!", 3, sampled, 2);
    let c = request(b"3rd", 2, Sampling::GREEDY, 3);
    let alone = |r: &Request| {
        let mut engine = Engine::new(&s, &model, cfg).unwrap();
        engine.submit(r.clone()).unwrap();
        engine.run().unwrap().remove(0).tokens
    };
    let mut engine = Engine::new(&s, &model, cfg).unwrap();
    engine.submit(a.clone()).unwrap();
    engine.step().unwrap();
    engine.step().unwrap();
    // b joins a running batch; c waits for pages: a holds 3 of 6 (11 tokens), b 3 (10).
    engine.submit(b.clone()).unwrap();
    engine.submit(c.clone()).unwrap();
    engine.step().unwrap();
    assert_eq!((engine.running(), engine.free_pages()), (2, 0));
    let mut done = engine.take_completed();
    while !engine.is_idle() {
        engine.step().unwrap();
        done.extend(engine.take_completed());
    }
    done.sort_by_key(|c| c.id);
    assert_eq!(done[0].tokens, alone(&a), "{qt:?}");
    assert_eq!(done[1].tokens, alone(&b), "{qt:?}");
    assert_eq!(done[2].tokens, alone(&c), "{qt:?}");
    assert_eq!(engine.free_pages(), 6);
    // Batches of one and of two: one graph each.
    assert_eq!(engine.stats().graphs_captured, 2);
}

#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let (_, file) = files(&ModelConfig::TINY, QuantType::Q8_0);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    let mut engine = Engine::new(&s, &model, EngineConfig::for_model(model.config())).unwrap();
    let long = request(&[b'x'; 30], 5, Sampling::GREEDY, 0);
    assert!(matches!(
        engine.submit(long),
        Err(ServeError::TooLong { .. })
    ));
    let mut bad = request(b"x", 1, Sampling::GREEDY, 0);
    bad.prompt[0] = 999;
    assert!(matches!(
        engine.submit(bad),
        Err(ServeError::TokenOutOfVocabulary { token: 999, .. })
    ));
    assert!(matches!(
        engine.submit(request(b"", 1, Sampling::GREEDY, 0)),
        Err(ServeError::EmptyPrompt)
    ));
    assert!(engine.is_idle());
}

#[test]
fn a_long_context_splits_decode_attention_and_still_follows_the_reference() {
    let (_, file) = files(&ModelConfig::TINY, QuantType::Q8_0);
    let s = stream();
    let model = ServeModel::load(&s, &file).unwrap();
    // 512 positions split in two (the device's chooser would not split on the emulator's
    // one SM, where a single block already fills it).
    let cfg = EngineConfig {
        max_batch: 1,
        block_size: 16,
        num_blocks: 32,
        max_context: 512,
        decode_splits: Some(2),
    };
    let mut engine = Engine::new(&s, &model, cfg).unwrap();
    engine
        .submit(request(b"split", 3, Sampling::GREEDY, 0))
        .unwrap();
    let done = engine.run().unwrap();
    let want = ReferenceModel::from_gguf(&file)
        .unwrap()
        .greedy(&tokenizer::encode(b"split"), 3);
    assert_eq!(done[0].tokens, want);
}

#[test]
fn a_fused_decode_step_gives_the_tokens_of_the_unfused_one() {
    // Fused, the Q4_K_M test model stacks every layer's gate and up, and q, k and v where
    // they share a format; Q8_0 rows of 256 stack q, k and v (its gate and up have no SwiGLU
    // form); the o projection reads attention's bf16 output in both.
    for (cfg, qt) in [
        (TEST_MODEL, QuantType::Q4KM),
        (
            ModelConfig {
                qkv_bias: true,
                ..TEST_MODEL
            },
            QuantType::Q4KM,
        ),
        (TEST_MODEL, QuantType::Q8_0),
    ] {
        let (_, file) = files(&cfg, qt);
        let s = stream();
        let stacked = ServeModel::load(&s, &file).unwrap();
        let apart = ServeModel::load_with(&s, &file, Fusion::Unfused).unwrap();
        let is_stacked = |p: &model::Projections| matches!(p, model::Projections::Stacked { .. });
        assert!(stacked.layers.iter().any(|l| is_stacked(&l.qkv)), "{qt:?}");
        assert_eq!(
            stacked.layers.iter().all(|l| is_stacked(&l.gate_up)),
            qt == QuantType::Q4KM
        );
        assert!(apart
            .layers
            .iter()
            .all(|l| !is_stacked(&l.qkv) && !is_stacked(&l.gate_up)));
        let sampled = Sampling {
            temperature: 1.2,
            top_k: 50,
            top_p: 0.98,
        };
        let run = |model: &ServeModel| {
            let cfg = EngineConfig {
                max_batch: 2,
                ..EngineConfig::for_model(model.config())
            };
            let mut engine = Engine::new(&s, model, cfg).unwrap();
            engine.submit(request(b"stack", 5, sampled, 7)).unwrap();
            engine
                .submit(request(b"apart!", 4, Sampling::GREEDY, 8))
                .unwrap();
            let mut done = engine.run().unwrap();
            done.sort_by_key(|c| c.id);
            done
        };
        let (a, b) = (run(&stacked), run(&apart));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.tokens, y.tokens, "{qt:?} bias {}", cfg.qkv_bias);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&x.prompt_logits), bits(&y.prompt_logits), "{qt:?}");
        }
    }
}
