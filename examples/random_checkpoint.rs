//! Writes a checkpoint of seeded random weights (`model.safetensors` + `config.json`) for
//! trying `ptxkit quantize` and `ptxkit generate` without training first:
//!
//! ```sh
//! cargo run --release --example random_checkpoint -- /tmp/ckpt small
//! cargo run --release -- quantize --checkpoint /tmp/ckpt --out model.gguf
//! ```
//!
//! The size is `tiny` (emulator-sized) or `small` (the GPU preset, the default).

use ptxkit::model::ModelConfig;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: random_checkpoint DIR [tiny|small]");
        std::process::exit(2);
    };
    let cfg = match args.next().as_deref() {
        None | Some("small") => ModelConfig::SMALL,
        Some("tiny") => ModelConfig::TINY,
        Some(other) => {
            eprintln!("unknown size {other:?}: use tiny or small");
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
