//! Writes a checkpoint of seeded random weights (`model.safetensors` + `config.json`) for
//! trying `ptxkit quantize` and `ptxkit generate` without training first:
//!
//! ```sh
//! cargo run --release --example random_checkpoint -- /tmp/ckpt small
//! cargo run --release -- quantize --checkpoint /tmp/ckpt --out model.gguf
//! ```
//!
//! The size is `tiny` (emulator-sized), `check` (2 layers of 256: rows of whole K-quant
//! blocks, so Q4_K_M uses Q4_K and Q6_K; a 1 MiB file for `scripts/crosscheck_gguf.py`) or
//! `small` (the GPU preset, the default).

use ptxkit::model::ModelConfig;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: random_checkpoint DIR [tiny|check|small]");
        std::process::exit(2);
    };
    let cfg = match args.next().as_deref() {
        None | Some("small") => ModelConfig::SMALL,
        Some("tiny") => ModelConfig::TINY,
        Some("check") => ModelConfig {
            hidden: 256,
            heads_q: 4,
            heads_kv: 2,
            ffn: 512,
            max_seq: 128,
            ..ModelConfig::TINY
        },
        Some(other) => {
            eprintln!("unknown size {other:?}: use tiny, check or small");
            std::process::exit(2);
        }
    };
    let dir = std::path::Path::new(&dir);
    if let Err(e) = std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|()| ptxkit::gguf::llama::write_random(dir, &cfg, 1).map_err(|e| e.to_string()))
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    println!(
        "wrote {} ({} parameters)",
        dir.display(),
        cfg.parameter_count()
    );
}
