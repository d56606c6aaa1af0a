use crate::args::GenerateArgs;
use crate::error::CliError;
use ptxkit::gguf::Gguf;
use ptxkit::model::tokenizer;
use ptxkit::serve::{Engine, EngineConfig, Request, Sampling, ServeModel};
use std::time::Instant;

/// Loads the model, serves every prompt with continuous batching, prints each completion
/// and the prefill and decode rates.
pub fn run(args: &GenerateArgs) -> Result<(), CliError> {
    let device = crate::run_cmd::pick_device(args.device)?;
    crate::run_cmd::print_device(&device);
    let stream = device.stream()?;
    let started = Instant::now();
    let file = Gguf::read(&args.model)?;
    let model = ServeModel::load(&stream, &file)?;
    let c = *model.config();
    println!(
        "model: {} layers, hidden {}, heads {}/{} of {}, vocab {}, context {} (loaded in {:.2} s)",
        c.layers,
        c.hidden,
        c.heads_q,
        c.heads_kv,
        c.head_dim,
        c.vocab,
        c.max_seq,
        started.elapsed().as_secs_f64()
    );
    let cfg = EngineConfig {
        max_batch: args.max_batch as usize,
        ..EngineConfig::for_model(&c)
    };
    let mut engine = Engine::new(&stream, &model, cfg)?;
    let sampling = Sampling {
        temperature: args.temperature,
        top_k: args.top_k as usize,
        top_p: args.top_p,
    };
    for (i, prompt) in args.prompt.iter().enumerate() {
        let mut tokens = vec![tokenizer::BOS];
        tokens.extend(tokenizer::encode(prompt.as_bytes()));
        engine.submit(Request {
            prompt: tokens,
            max_tokens: args.max_tokens as usize,
            sampling,
            seed: args.seed.wrapping_add(i as u64),
            stop_at_eos: !args.ignore_eos,
        })?;
    }
    let done = engine.run()?;
    for (c, prompt) in done.iter().zip(&args.prompt) {
        let text = tokenizer::decode(&c.tokens);
        println!(
            "[{}] {prompt}{} ({} tokens, {:?})",
            c.id,
            String::from_utf8_lossy(&text),
            c.tokens.len(),
            c.finish
        );
    }
    if let Some(path) = &args.logits_out {
        let bytes: Vec<u8> = done
            .iter()
            .flat_map(|c| c.prompt_logits.iter().flat_map(|x| x.to_le_bytes()))
            .collect();
        std::fs::write(path, bytes).map_err(|source| CliError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    let s = engine.stats();
    println!(
        "prefill: {} tokens in {:.3} s ({:.1} tokens/s)",
        s.prefill_tokens,
        s.prefill_secs,
        s.prefill_tokens as f64 / s.prefill_secs.max(1e-9)
    );
    println!(
        "decode: {} tokens in {} steps, {:.3} s ({:.1} tokens/s), {} graph(s) captured",
        s.decode_tokens,
        s.decode_steps,
        s.decode_secs,
        s.decode_tokens_per_sec(),
        s.graphs_captured
    );
    Ok(())
}
