//! The embedding gather and its backward, each as a share of the device's copy bandwidth (the
//! driver's device-to-device copy of 1 GiB, measured in the same run), timed twice so that
//! clock drift shows as disagreement between the passes. (The builder kernels they replaced
//! were timed beside them here until the ports matched them; BENCHMARKS.md has those figures.)
//! Bytes: the forward reads `tokens` table rows and writes as many; the backward reads the
//! `tokens` gradient rows and writes the whole table; both read the ids.
//!
//! ```text
//! cargo run --release -p kernels --example bench_embedding          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_embedding      # tiny shapes on the emulator
//! BENCH_ONLY=embedding_backward/bf16 BENCH_RUNS=1 ncu … bench_embedding  # some rows
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::embedding;
use kernels::Float;

/// One table row.
fn measure<T: Float>(b: &Bench, backward: bool, [tokens, vocab, hidden]: [usize; 3]) -> Res {
    let op = if backward {
        "embedding_backward"
    } else {
        "embedding"
    };
    let shape = format!("{tokens}x{vocab}x{hidden}");
    let name = format!("{op}/{}/{shape}", T::TYPE.suffix());
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return Ok(());
    }
    let ids: Vec<u32> = (0..tokens)
        .map(|t| ((t * 7919 + 13) % vocab) as u32)
        .collect();
    let ids = Buffer::from_host(&b.stream, &ids)?;
    let e = std::mem::size_of::<T>();
    let rows = if backward { tokens + vocab } else { 2 * tokens };
    let bytes = (rows * hidden * e + 4 * tokens) as f64;
    let batch = batch();
    // The forward reads the table and writes `tokens` rows; the backward the reverse.
    let small = filled::<T>(&b.stream, tokens * hidden, 6)?;
    let mut table = filled::<T>(&b.stream, vocab * hidden, 7)?;
    let mut out = Buffer::<T>::zeros(&b.stream, tokens * hidden)?;
    let (t, v, h) = (tokens, vocab, hidden);
    let cells = b.percent_twice(bytes * batch as f64, |s| {
        for _ in 0..batch {
            if backward {
                embedding::embedding_backward(s, &small, &ids, &mut table, t, v, h)?
            } else {
                embedding::embedding(s, &table, &ids, &mut out, t, v, h)?
            }
        }
        Ok(())
    })?;
    let label = format!("{:<18} | {:<4} | {:<16}", op, T::TYPE.suffix(), shape);
    single_row(&label, cells);
    Ok(())
}

/// Launches per timed run (`BENCH_BATCH`, default 1). A short kernel's time from one launch
/// includes the host's launch cost; back-to-back launches overlap it with the kernel before.
fn batch() -> usize {
    std::env::var("BENCH_BATCH")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | tokens x vocab x hidden | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // The k2 suite's shape (a 152K vocabulary, 4096 wide), a narrow one (a warp per row) and a
    // width that is not a multiple of 16 bytes (one element per access).
    let shapes: &[[usize; 3]] = if Bench::small() {
        &[[40, 300, 64], [40, 300, 24], [40, 300, 4097]]
    } else {
        &[
            [4096, 151936, 4096],
            [16384, 32000, 256],
            [4096, 32000, 4097],
        ]
    };
    for &shape in shapes {
        for backward in [false, true] {
            measure::<f32>(&b, backward, shape)?;
            measure::<Bf16>(&b, backward, shape)?;
        }
    }
    Ok(())
}
