//! Decode throughput of `ptxkit::serve` on the GPU: a random Llama-style model quantized
//! Q4_K_M, batches of 1, 4 and 16 sequences of a 128-token prompt generating 128 tokens
//! each, decode steps replayed from captured graphs. Prints tokens/s per batch size, for the
//! model loaded with a decode step's launches fused (`Fusion::Fused`, the default) and
//! unfused, one after the other in the same process.
//!
//! `cargo run --release --example bench_generate` (needs a GPU; says so and exits without).
//! `BENCH_ONLY=medium/1/` runs the rows whose `model/batch/fusion` label contains the text
//! (`medium/1/unfused` one row, for a profiler).

use ptxkit::gguf::llama::{quantize, Checkpoint, QuantType};
use ptxkit::gguf::Gguf;
use ptxkit::model::ModelConfig;
use ptxkit::runtime::Device;
use ptxkit::serve::{Engine, EngineConfig, Fusion, Request, Sampling, ServeModel};

fn main() {
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("bench_generate needs a GPU: {e}");
            return;
        }
    };
    let stream = device.stream().unwrap();
    let models = [
        ("small", "small (8 x 512)", ModelConfig::SMALL),
        (
            "medium",
            "medium (8 x 2048)",
            ModelConfig {
                hidden: 2048,
                layers: 8,
                heads_q: 16,
                heads_kv: 4,
                head_dim: 128,
                ffn: 5632,
                max_seq: 512,
                ..ModelConfig::SMALL
            },
        ),
    ];
    println!("model              batch  launches  prefill tok/s  decode tok/s  graphs");
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |label: &str| only.as_deref().is_none_or(|o| label.contains(o));
    for (short, name, cfg) in models {
        let rows = [1, 4, 16].map(|b| ["fused", "unfused"].map(|f| format!("{short}/{b}/{f}")));
        if !rows.iter().flatten().any(|label| wanted(label)) {
            continue;
        }
        let (w, _) = quantize(&Checkpoint::random(&cfg, 1), QuantType::Q4KM).unwrap();
        let file = Gguf::parse(w.to_bytes().unwrap()).unwrap();
        let fused = ServeModel::load(&stream, &file).unwrap();
        let unfused = ServeModel::load_with(&stream, &file, Fusion::Unfused).unwrap();
        for (batch, (form, model)) in [1usize, 4, 16]
            .into_iter()
            .flat_map(|b| [("fused", &fused), ("unfused", &unfused)].map(|m| (b, m)))
        {
            if !wanted(&format!("{short}/{batch}/{form}")) {
                continue;
            }
            let engine_cfg = EngineConfig {
                max_batch: batch,
                ..EngineConfig::for_model(&cfg)
            };
            let mut engine = Engine::new(&stream, model, engine_cfg).unwrap();
            for i in 0..batch {
                engine
                    .submit(Request {
                        prompt: (0..128).map(|t| ((t * 7 + i) % 256) as u32).collect(),
                        max_tokens: 128,
                        sampling: Sampling::GREEDY,
                        seed: i as u64,
                        stop_at_eos: false,
                    })
                    .unwrap();
            }
            engine.run().unwrap();
            let s = engine.stats();
            println!(
                "{name:<18} {batch:>5}  {form:<8}  {:>13.0}  {:>12.0}  {:>6}",
                s.prefill_tokens as f64 / s.prefill_secs,
                s.decode_tokens_per_sec(),
                s.graphs_captured
            );
        }
    }
}
