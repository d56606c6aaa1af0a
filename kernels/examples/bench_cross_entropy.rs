//! Fused softmax cross-entropy, as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each row is timed twice, so that
//! clock drift shows as disagreement between the passes. The bytes are the logits read once
//! and the gradient written once. f32 rows that the split pass takes are timed with each pass
//! (`RowPass::Streamed` and `RowPass::Split`) beside the automatic choice.
//!
//! ```text
//! cargo run --release -p kernels --example bench_cross_entropy          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_cross_entropy      # tiny shapes, emulator
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::cross_entropy::{self, RowPass};
use kernels::Float;

/// One table row: two passes over the same buffers.
fn measure<T: Float>(b: &Bench, rows: usize, vocab: usize, pass: RowPass) -> Res {
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
    let mut ws = Buffer::<u32>::zeros(s, cross_entropy::cross_entropy_workspace(rows, vocab))?;
    let bytes = (2 * n * std::mem::size_of::<T>() + rows * 8) as f64;
    let passes = b.percent_twice(bytes, |s| {
        cross_entropy::cross_entropy_with::<T>(
            s,
            &logits,
            &targets,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            &mut ws,
            rows,
            vocab,
            -100,
            pass,
        )?;
        Ok(())
    })?;
    let label = format!(
        "cross_entropy | {:<4} | {:>5}x{:<6} | {:<8}",
        T::TYPE.suffix(),
        rows,
        vocab,
        format!("{pass:?}")
    );
    single_row(&label, passes);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | rows x vocab | pass | % copy (2 passes) |");
    println!("|---|---|---|---|---|");
    // Qwen's vocabulary (16-byte rows), Llama 3's, Llama 2's, two widths around the split's
    // threshold, and GPT-2's (odd: one element at a time).
    let shapes: &[(usize, usize)] = if Bench::small() {
        &[(5, 3000), (3, 20000), (2, 5001)]
    } else {
        &[
            (4096, 151936),
            (4096, 128256),
            (8192, 32000),
            (8192, 49152),
            (4096, 65536),
            (8192, 16384),
            (16384, 8192),
            (32768, 4096),
            (4096, 50257),
        ]
    };
    let only = std::env::var("BENCH_ONLY").ok();
    for &(rows, vocab) in shapes {
        if only
            .as_ref()
            .is_some_and(|o| !format!("{rows}x{vocab}").contains(o.as_str()))
        {
            continue;
        }
        measure::<f32>(&b, rows, vocab, RowPass::Auto)?;
        if vocab % 4 == 0 {
            measure::<f32>(&b, rows, vocab, RowPass::Streamed)?;
            measure::<f32>(&b, rows, vocab, RowPass::Split)?;
        }
        measure::<Bf16>(&b, rows, vocab, RowPass::Auto)?;
        if vocab % 8 == 0 {
            measure::<Bf16>(&b, rows, vocab, RowPass::Streamed)?;
            measure::<Bf16>(&b, rows, vocab, RowPass::Split)?;
        }
    }
    Ok(())
}
