//! Achieved bandwidth of the row-wise and index-mapping ops (RoPE, embedding, cross-entropy,
//! argmax) against the device's copy bandwidth, measured in one process.
//!
//! `cargo run --release -p kernels --example bench_row_ops` on a GPU; `BENCH_SMALL=1` runs tiny
//! shapes on the emulator to check the whole path end to end;
//! `BENCH_ONLY=rope,vocab` runs only those groups (rope, embedding, vocab); softmax has its own,
//! `bench_softmax`, and the layout moves `bench_layout`.
//!
//! Each op is timed with CUDA events after warm-up, as the median of the timed launches
//! (`common::Bench`, as every bench here); its bytes are the least it must read plus write.
//! Copy bandwidth is the driver's device-to-device copy over 1 GiB, far larger than L2.

mod common;

use common::{Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::argmax::{argmax, argmax_workspace};
use kernels::cross_entropy::{cross_entropy, cross_entropy_workspace};
use kernels::embedding::{embedding, embedding_backward};
use kernels::rope::{rope, rope_backward, Rope, RopeLayout};
use kernels::Error;
use kernels::Float;

/// Median milliseconds of an op over the timed runs (`Bench::time`, for ops that return the
/// library's error).
fn timed(bench: &Bench, mut f: impl FnMut(&Stream) -> Result<(), Error>) -> Res<f64> {
    bench.time(|s| Ok(f(s)?))
}

/// Prints one table row: `bytes` moved in `ms`.
fn report(bench: &Bench, op: &str, dtype: &str, shape: &str, bytes: usize, ms: f64) {
    let gbs = bytes as f64 / (ms * 1e-3) / 1e9;
    let pct = bench.percent(bytes as f64, ms);
    println!("| {op:<24} | {dtype:<5} | {shape:<22} | {ms:>9.4} | {gbs:>8.1} | {pct:>6.1}% |");
}

fn random<T: Float>(stream: &Stream, n: usize, seed: u64, lo: f32, hi: f32) -> Res<Buffer<T>> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let host: Vec<T> = (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let u = (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
            T::from_f32(lo + (hi - lo) * u)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

fn dtype_name<T: Float>() -> &'static str {
    T::TYPE.suffix()
}

fn bench_vocab<T: Float>(bench: &Bench) -> Res {
    let (rows, vocab) = if Bench::small() {
        (5, 3000)
    } else {
        (4096, 151936)
    };
    let n = rows * vocab;
    let s = &bench.stream;
    let logits = random::<T>(s, n, 3, -8.0, 8.0)?;
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
    let shape = format!("{rows}×{vocab}");
    let bytes = 2 * n * T::TYPE.bytes() + rows * 8;
    let mut ce_ws = Buffer::<u32>::zeros(s, cross_entropy_workspace(rows, vocab))?;
    let ms = timed(bench, |s| {
        cross_entropy(
            s,
            &logits,
            &targets,
            &mut dlogits,
            &mut row_loss,
            &mut loss,
            &mut ce_ws,
            rows,
            vocab,
            -100,
        )
    })?;
    report(bench, "cross_entropy", dtype_name::<T>(), &shape, bytes, ms);
    let decode_rows = rows.min(64);
    let decode_logits = random::<T>(s, decode_rows * vocab, 4, -8.0, 8.0)?;
    let mut index = Buffer::<u32>::zeros(s, decode_rows)?;
    let mut ws = Buffer::<u32>::zeros(s, argmax_workspace(decode_rows, vocab))?;
    let ms = timed(bench, |s| {
        argmax(s, &decode_logits, &mut index, &mut ws, decode_rows, vocab)
    })?;
    let shape = format!("{decode_rows}×{vocab}");
    report(
        bench,
        "argmax",
        dtype_name::<T>(),
        &shape,
        decode_rows * vocab * T::TYPE.bytes(),
        ms,
    );
    Ok(())
}

fn bench_rope<T: Float>(bench: &Bench) -> Res {
    let (tokens, heads, head_dim) = if Bench::small() {
        (5, 4, 128)
    } else {
        (4096, 32, 128)
    };
    let n = tokens * heads * head_dim;
    let s = &bench.stream;
    let x = random::<T>(s, n, 5, -2.0, 2.0)?;
    let positions: Vec<u32> = (0..tokens as u32).collect();
    let positions = Buffer::from_host(s, &positions)?;
    let mut y = Buffer::<T>::zeros(s, n)?;
    let shape = format!("{tokens}×{heads}×{head_dim}");
    let bytes = 2 * n * T::TYPE.bytes() + tokens * 4;
    for layout in [RopeLayout::NeoX, RopeLayout::Interleaved] {
        let spec = Rope {
            layout,
            theta: 10000.0,
            rotary_dim: head_dim,
        };
        let ms = timed(bench, |s| {
            rope(s, &x, &positions, &mut y, tokens, heads, head_dim, spec)
        })?;
        let name = format!("rope {layout:?}");
        report(bench, &name, dtype_name::<T>(), &shape, bytes, ms);
    }
    let spec = Rope {
        layout: RopeLayout::NeoX,
        theta: 10000.0,
        rotary_dim: head_dim,
    };
    let ms = timed(bench, |s| {
        rope_backward(s, &x, &positions, &mut y, tokens, heads, head_dim, spec)
    })?;
    report(
        bench,
        "rope_backward NeoX",
        dtype_name::<T>(),
        &shape,
        bytes,
        ms,
    );
    Ok(())
}

fn bench_embedding<T: Float>(bench: &Bench) -> Res {
    let (tokens, vocab, hidden) = if Bench::small() {
        (40, 300, 64)
    } else {
        (4096, 151936, 4096)
    };
    let s = &bench.stream;
    let table = random::<T>(s, vocab * hidden, 6, -1.0, 1.0)?;
    let ids: Vec<u32> = (0..tokens)
        .map(|t| ((t * 7919 + 13) % vocab) as u32)
        .collect();
    let ids = Buffer::from_host(s, &ids)?;
    let mut out = Buffer::<T>::zeros(s, tokens * hidden)?;
    let e = T::TYPE.bytes();
    let shape = format!("{tokens}×{vocab}×{hidden}");
    let ms = timed(bench, |s| {
        embedding(s, &table, &ids, &mut out, tokens, vocab, hidden)
    })?;
    report(
        bench,
        "embedding",
        dtype_name::<T>(),
        &shape,
        2 * tokens * hidden * e + tokens * 4,
        ms,
    );
    drop(table);
    let mut dtable = Buffer::<T>::zeros(s, vocab * hidden)?;
    let ms = timed(bench, |s| {
        embedding_backward(s, &out, &ids, &mut dtable, tokens, vocab, hidden)
    })?;
    let bytes = (tokens + vocab) * hidden * e + tokens * 4;
    report(
        bench,
        "embedding_backward",
        dtype_name::<T>(),
        &shape,
        bytes,
        ms,
    );
    Ok(())
}

fn main() -> Res {
    let bench = Bench::new()?;
    println!("| op                       | dtype | shape                  |        ms |     GB/s | % copy |");
    println!("|--------------------------|-------|------------------------|-----------|----------|--------|");
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |group: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|g| g == group))
    };
    if wanted("rope") {
        bench_rope::<f32>(&bench)?;
        bench_rope::<Bf16>(&bench)?;
    }
    if wanted("embedding") {
        bench_embedding::<f32>(&bench)?;
        bench_embedding::<Bf16>(&bench)?;
    }
    if wanted("vocab") {
        bench_vocab::<f32>(&bench)?;
        bench_vocab::<Bf16>(&bench)?;
    }
    Ok(())
}
