//! Greedy decoding's arg-max, as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each row is timed twice, so that
//! clock drift shows as disagreement between the passes. The bytes are the logits, read once.
//!
//! ```text
//! cargo run --release -p kernels --example bench_argmax          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_argmax      # tiny shapes, emulator
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::argmax;
use kernels::Float;

/// One table row.
fn measure<T: Float>(b: &Bench, rows: usize, vocab: usize) -> Res {
    let s = &b.stream;
    let logits = filled::<T>(s, rows * vocab, 5)?;
    let mut index = Buffer::<u32>::zeros(s, rows)?;
    let mut ws = Buffer::<u32>::zeros(s, argmax::argmax_workspace(rows, vocab))?;
    let bytes = (rows * vocab * std::mem::size_of::<T>()) as f64;
    let cells = b.percent_twice(bytes, |s| {
        argmax::argmax(s, &logits, &mut index, &mut ws, rows, vocab)?;
        Ok(())
    })?;
    let label = format!(
        "argmax | {:<4} | {:>5}x{:<6}",
        T::TYPE.suffix(),
        rows,
        vocab
    );
    single_row(&label, cells);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | rows x vocab | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // Decode batches over Qwen's vocabulary (16-byte rows), one sequence, and GPT-2's odd one.
    let shapes: &[(usize, usize)] = if Bench::small() {
        &[(3, 20000), (1, 5001)]
    } else {
        &[(64, 151936), (1, 151936), (256, 151936), (64, 50257)]
    };
    for &(rows, vocab) in shapes {
        measure::<f32>(&b, rows, vocab)?;
        measure::<Bf16>(&b, rows, vocab)?;
    }
    Ok(())
}
