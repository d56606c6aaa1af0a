use crate::args::{QuantChoice, QuantizeArgs};
use crate::error::CliError;
use ptxkit::gguf::llama::{quantize, Checkpoint, QuantType};
use std::collections::BTreeMap;
use std::time::Instant;

/// Reads the checkpoint, quantizes it and writes the GGUF file; prints the tensors per type.
pub fn run(args: &QuantizeArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let qt = match args.quant {
        QuantChoice::Q4KM => QuantType::Q4KM,
        QuantChoice::Q8_0 => QuantType::Q8_0,
        QuantChoice::Q6K => QuantType::Q6K,
    };
    let ckpt = Checkpoint::load(&args.checkpoint)?;
    let c = ckpt.config;
    println!(
        "checkpoint: {} layers, hidden {}, heads {}/{} of {}, ffn {}, vocab {}, {} parameters",
        c.layers,
        c.hidden,
        c.heads_q,
        c.heads_kv,
        c.head_dim,
        c.ffn,
        c.vocab,
        c.parameter_count()
    );
    let (file, tensors) = quantize(&ckpt, qt)?;
    file.write(&args.out)?;
    let mut by_type: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for t in &tensors {
        let e = by_type.entry(t.ty.name()).or_default();
        e.0 += 1;
        e.1 += t.bytes;
    }
    for (ty, (n, bytes)) in &by_type {
        println!(
            "  {ty:>5}: {n:>4} tensors, {:>10.2} MiB",
            *bytes as f64 / (1 << 20) as f64
        );
    }
    let total: usize = tensors.iter().map(|t| t.bytes).sum();
    println!(
        "wrote {} ({}, {:.2} MiB, {:.2} bits a weight) in {:.2} s",
        args.out.display(),
        qt.name(),
        total as f64 / (1 << 20) as f64,
        total as f64 * 8.0 / c.parameter_count() as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
