//! Fused softmax cross-entropy in `#[kernel]` against the builder-written kernels it replaces,
//! side by side in one process, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each pair is timed twice,
//! alternating, so that clock drift shows as disagreement between the passes. The bytes are
//! the logits read once and the gradient written once.
//!
//! ```text
//! cargo run --release -p kernels --example bench_cross_entropy          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_cross_entropy      # tiny shapes, emulator
//! ```

mod common;

use common::{filled, row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::cast::Element;
use kernels::cross_entropy;

/// One table row: the builder kernels and the `#[kernel]` ones on the same buffers.
fn compare<T: Element>(b: &Bench, rows: usize, vocab: usize) -> Res {
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
    let mut cells = Vec::new();
    for _pass in 0..2 {
        let mut run = |builder: bool| {
            b.time(|s| {
                let f = if builder {
                    cross_entropy::cross_entropy_builder::<T>
                } else {
                    cross_entropy::cross_entropy::<T>
                };
                f(
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
            })
        };
        let old = run(true)?;
        let new = run(false)?;
        cells.push((b.percent(bytes, old), b.percent(bytes, new)));
    }
    let label = format!(
        "cross_entropy | {:<4} | {:>5}x{:<6}",
        T::STORAGE.suffix(),
        rows,
        vocab
    );
    row(&label, &cells);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | rows x vocab | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|---|");
    // Qwen's vocabulary (16-byte rows), Llama 2's, and GPT-2's (odd: one element at a time).
    let shapes: &[(usize, usize)] = if Bench::small() {
        &[(5, 3000), (3, 20000), (2, 5001)]
    } else {
        &[(4096, 151936), (8192, 32000), (4096, 50257)]
    };
    for &(rows, vocab) in shapes {
        compare::<f32>(&b, rows, vocab)?;
        compare::<Bf16>(&b, rows, vocab)?;
    }
    Ok(())
}
