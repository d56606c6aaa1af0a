//! `ptxkit::serve` on a real GPU with the GPU-sized model: prefill logits against the f64
//! forward of the dequantized file, the greedy path, and a full batch of 16 with sequences
//! joining and leaving. Skips with one line where no GPU is present.

use ptxkit::gguf::llama::{quantize, Checkpoint, QuantType};
use ptxkit::gguf::Gguf;
use ptxkit::model::{tokenizer, ModelConfig};
use ptxkit::runtime::Device;
use ptxkit::serve::{Engine, EngineConfig, ReferenceModel, Request, Sampling, ServeModel};

fn gguf(cfg: &ModelConfig, qt: QuantType) -> Gguf {
    let (w, _) = quantize(&Checkpoint::random(cfg, 5), qt).unwrap();
    Gguf::parse(w.to_bytes().unwrap()).unwrap()
}

fn request(prompt: &str, max_tokens: usize, sampling: Sampling, seed: u64) -> Request {
    Request {
        prompt: tokenizer::encode(prompt.as_bytes()),
        max_tokens,
        sampling,
        seed,
        stop_at_eos: false,
    }
}

#[test]
fn generate_on_the_gpu_follows_the_f64_reference_and_batches_sixteen() {
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("skipping: no CUDA driver/GPU present ({e})");
            return;
        }
    };
    let stream = device.stream().unwrap();
    let file = gguf(&ModelConfig::SMALL, QuantType::Q4KM);
    let model = ServeModel::load(&stream, &file).unwrap();
    let reference = ReferenceModel::from_gguf(&file).unwrap();
    let cfg = EngineConfig::for_model(model.config());

    // The greedy path of a prompt, and its prefill logits.
    let prompt = "The GPU decodes";
    let mut engine = Engine::new(&stream, &model, cfg).unwrap();
    engine
        .submit(request(prompt, 6, Sampling::GREEDY, 0))
        .unwrap();
    let done = engine.run().unwrap();
    let tokens = tokenizer::encode(prompt.as_bytes());
    let want = reference.logits(&tokens).pop().unwrap();
    let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = done[0]
        .prompt_logits
        .iter()
        .zip(&want)
        .fold(0.0f64, |m, (&a, b)| m.max((f64::from(a) - b).abs()));
    println!("prefill logits: max |diff| {err:.3e} of logits up to {scale:.3e}");
    assert!(err < 1e-2 * scale, "{err} vs {scale}");
    assert_eq!(done[0].tokens, reference.greedy(&tokens, 6));

    // 20 requests through a batch of 16: the last four join as the first ones leave.
    let mut engine = Engine::new(&stream, &model, cfg).unwrap();
    let requests: Vec<Request> = (0..20)
        .map(|i| {
            request(
                &format!("prompt number {i}:"),
                4 + i % 7,
                Sampling::GREEDY,
                i as u64,
            )
        })
        .collect();
    for r in &requests {
        engine.submit(r.clone()).unwrap();
    }
    let done = engine.run().unwrap();
    for (r, c) in requests.iter().zip(&done).step_by(5) {
        let mut alone = Engine::new(&stream, &model, cfg).unwrap();
        alone.submit(r.clone()).unwrap();
        assert_eq!(c.tokens, alone.run().unwrap()[0].tokens, "request {}", c.id);
    }
    assert_eq!(engine.free_pages(), cfg.num_blocks);
    let s = engine.stats();
    println!(
        "{} decode steps, {} graphs, {:.1} tokens/s",
        s.decode_steps,
        s.graphs_captured,
        s.decode_tokens_per_sec()
    );
}
