//! The layout moves and the paged KV-cache append written in `#[kernel]`, each as a share of the
//! device's copy bandwidth (the driver's device-to-device copy of 1 GiB, measured in the same
//! run). Each is timed twice, so that clock drift shows as disagreement between the passes. Bytes: every element read once and written once; the append also reads
//! each token's sequence id and position.
//!
//! ```text
//! cargo run --release -p kernels --example bench_layout          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_layout      # tiny shapes on the emulator
//! BENCH_ONLY=transpose/bf16 BENCH_RUNS=1 ncu … bench_layout      # some rows, for a profiler
//! BENCH_BATCH=10 cargo run --release -p kernels --example bench_layout  # launches per timing
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::layout::{self, PagedLayout};
use kernels::Error;
use kernels::Float;

/// Launches per timed run (`BENCH_BATCH`, default 1). A short kernel's time from one launch
/// includes the host's launch cost; back-to-back launches overlap it with the kernel before.
fn batch() -> usize {
    std::env::var("BENCH_BATCH")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// Times `run` twice and prints one row (the builder column empty: every builder kernel of
/// these ops is deleted); `bytes` is what one launch moves.
fn single(
    b: &Bench,
    op: &str,
    dtype: &str,
    shape: &str,
    bytes: usize,
    mut run: impl FnMut(&Stream) -> Result<(), Error>,
) -> Res {
    if !selected(op, dtype, shape) {
        return Ok(());
    }
    let batch = batch();
    let pct = b.percent_twice((bytes * batch) as f64, |s| {
        for _ in 0..batch {
            run(s)?;
        }
        Ok(())
    })?;
    single_row(&format!("{op:<15} | {dtype:<4} | {shape:<16} | - "), pct);
    Ok(())
}

/// Whether `BENCH_ONLY` (when set) picks this row.
fn selected(op: &str, dtype: &str, shape: &str) -> bool {
    let name = format!("{op}/{dtype}/{shape}");
    !std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only))
}

fn bench<T: Float>(b: &Bench) -> Res {
    let s = &b.stream;
    let e = std::mem::size_of::<T>();
    let dt = T::TYPE.suffix();
    let (tokens, heads, head_dim) = if Bench::small() {
        (5, 4, 128)
    } else {
        (4096, 32, 128)
    };
    let n = tokens * heads * head_dim;
    let x = filled::<T>(s, n, 7)?;
    let mut y = Buffer::<T>::zeros(s, n)?;
    let shape = format!("{tokens}x{heads}x{head_dim}");
    single(b, "[S,H·D]→[H,S,D]", dt, &shape, 2 * n * e, |s| {
        layout::heads_from_interleaved(s, &x, &mut y, tokens, heads, head_dim)
    })?;
    single(b, "[H,S,D]→[S,H·D]", dt, &shape, 2 * n * e, |s| {
        layout::interleaved_from_heads(s, &x, &mut y, tokens, heads, head_dim)
    })?;
    drop((x, y));

    let (rows, cols) = if Bench::small() {
        (33, 65)
    } else {
        (16384, 4096)
    };
    let m = filled::<T>(s, rows * cols, 8)?;
    let mut mt = Buffer::<T>::zeros(s, rows * cols)?;
    let shape = format!("{rows}x{cols}");
    single(b, "transpose", dt, &shape, 2 * rows * cols * e, |s| {
        layout::transpose(s, &m, &mut mt, rows, cols)
    })?;
    drop((m, mt));

    let (kv_heads, block_size) = (8, 16);
    let width = kv_heads * head_dim;
    let seqs = if Bench::small() { 2 } else { 16 };
    let blocks_per_seq = tokens.div_ceil(block_size);
    let paged = PagedLayout {
        num_blocks: seqs * blocks_per_seq,
        block_size,
        width,
        seqs,
        blocks_per_seq,
    };
    let table: Vec<u32> = (0..seqs * blocks_per_seq)
        .map(|i| ((i * 7) % (seqs * blocks_per_seq)) as u32)
        .collect();
    let table = Buffer::from_host(s, &table)?;
    let new = filled::<T>(s, tokens * width, 9)?;
    let seq_ids = Buffer::from_host(s, &vec![1u32; tokens])?;
    let positions: Vec<u32> = (0..tokens as u32).collect();
    let positions = Buffer::from_host(s, &positions)?;
    let mut cache = Buffer::<T>::zeros(s, paged.cache_len())?;
    let shape = format!("{tokens}x{width} b{block_size}");
    let bytes = 2 * tokens * width * e + tokens * 8;
    single(b, "kv_cache_append", dt, &shape, bytes, |s| {
        let (p, t) = (&positions, &table);
        layout::kv_cache_append(s, &new, &seq_ids, p, t, &mut cache, tokens, paged)
    })?;
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | shape | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|---|");
    // bench_row_ops' shapes: Llama-like heads (32 of 128 over 4096 tokens), a 16384 × 4096
    // matrix, and 4096 tokens of 8 KV heads appended in blocks of 16.
    bench::<f32>(&b)?;
    bench::<Bf16>(&b)?;
    Ok(())
}
