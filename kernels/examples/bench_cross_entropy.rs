//! Fused softmax cross-entropy, as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each row is timed twice, so that
//! clock drift shows as disagreement between the passes. The bytes are the logits read once
//! and the gradient written once.
//!
//! ```text
//! cargo run --release -p kernels --example bench_cross_entropy          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_cross_entropy      # tiny shapes, emulator
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::cross_entropy;
use kernels::Float;

/// One table row: two passes over the same buffers.
fn measure<T: Float>(b: &Bench, rows: usize, vocab: usize) -> Res {
    let n = rows * vocab;
    let s = &b.stream;
    let logits = filled::<T>(s, n, 3)?;
    // Every 17th row ignored, the others aiming somewhere across the vocabulary.
    let targets: Vec<i32> = (0..rows)
        .map(|r| {
            if r % 17 == 5 {
                -100
            } else {
                ((r * 7919) % vocab) as i32
            }
        })
        .collect();
    let targets = Buffer::from_host(s, &targets)?;
    let mut dlogits = Buffer::<T>::zeros(s, n)?;
    let mut row_loss = Buffer::<f32>::zeros(s, rows)?;
    let mut loss = Buffer::<f32>::zeros(s, 2)?;
    let bytes = (2 * n * std::mem::size_of::<T>() + rows * 8) as f64;
    let passes = b.percent_twice(bytes, |s| {
        cross_entropy::cross_entropy::<T>(
            s,
            &logits,
            &targets,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            rows,
            vocab,
            -100,
        )?;
        Ok(())
    })?;
    let label = format!(
        "cross_entropy | {:<4} | {:>5}x{:<6}",
        T::TYPE.suffix(),
        rows,
        vocab
    );
    single_row(&label, passes);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | rows x vocab | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // Qwen's vocabulary (16-byte rows), Llama 2's, and GPT-2's (odd: one element at a time).
    let shapes: &[(usize, usize)] = if Bench::small() {
        &[(5, 3000), (3, 20000), (2, 5001)]
    } else {
        &[(4096, 151936), (8192, 32000), (4096, 50257)]
    };
    for &(rows, vocab) in shapes {
        measure::<f32>(&b, rows, vocab)?;
        measure::<Bf16>(&b, rows, vocab)?;
    }
    Ok(())
}
