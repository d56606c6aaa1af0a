//! Softmax forward (plain and causal) and backward, each as a share of the device's copy
//! bandwidth (the driver's device-to-device copy of 1 GiB, measured in the same run), at rows a
//! warp holds, rows a block holds, rows that stream, and rows of one-element accesses. Each row
//! is timed twice, so that clock drift shows as disagreement between the passes.
//!
//! ```text
//! cargo run --release -p kernels --example bench_softmax          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_softmax      # tiny shapes on the emulator
//! BENCH_ONLY=backward/bf16 BENCH_RUNS=1 ncu … bench_softmax       # some rows, for a profiler
//! ```

mod common;

use common::{filled, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::softmax::{self, Mask};
use kernels::Float;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Forward,
    Causal,
    Backward,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Forward => "softmax",
            Op::Causal => "softmax causal",
            Op::Backward => "softmax backward",
        }
    }
}

/// One table row.
fn measure<T: Float>(b: &Bench, op: Op, rows: usize, cols: usize) -> Res {
    let name = format!(
        "{}/{}/{rows}x{cols}",
        op.name().replace(' ', "_"),
        T::TYPE.suffix()
    );
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return Ok(());
    }
    let n = rows * cols;
    let x = filled::<T>(&b.stream, n, 1)?;
    let dy = filled::<T>(&b.stream, n, 2)?;
    let mut y = Buffer::<T>::zeros(&b.stream, n)?;
    softmax::softmax(&b.stream, &x, &mut y, rows, cols, 1.0, Mask::None)?;
    let mut dx = Buffer::<T>::zeros(&b.stream, n)?;
    let mask = match op {
        Op::Causal => Mask::Causal {
            queries: rows.min(cols),
        },
        _ => Mask::None,
    };
    // Masked scores are never read: the bytes are the visible scores plus the whole output.
    let elems = match op {
        Op::Forward => 2 * n,
        Op::Causal => n + (0..rows).map(|r| mask.limit(r, cols) + 1).sum::<usize>(),
        Op::Backward => 3 * n,
    };
    let bytes = (elems * std::mem::size_of::<T>()) as f64;
    let mut passes = Vec::new();
    for _pass in 0..2 {
        let ms = b.time(|s| {
            match op {
                Op::Backward => softmax::softmax_backward(s, &y, &dy, &mut dx, rows, cols, 1.0)?,
                _ => softmax::softmax(s, &x, &mut y, rows, cols, 0.08, mask)?,
            }
            Ok(())
        })?;
        passes.push(b.percent(bytes, ms));
    }
    let label = format!(
        "{:<16} | {:<4} | {:>6}x{:<5}",
        op.name(),
        T::TYPE.suffix(),
        rows,
        cols
    );
    println!("| {label} | {:>5.1} / {:>5.1} |", passes[0], passes[1]);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | rows x cols | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // Rows a warp holds, rows a block holds, rows wider than a block holds (streamed), and a
    // width that is not a multiple of 16 bytes (one element per access).
    let shapes: &[(usize, usize)] = if Bench::small() {
        &[(8, 256), (4, 4096), (2, 20000), (8, 1001)]
    } else {
        &[(65536, 512), (16384, 4096), (1024, 65536), (32768, 1001)]
    };
    for op in [Op::Forward, Op::Causal, Op::Backward] {
        for &(rows, cols) in shapes {
            if op == Op::Causal && cols != shapes[1].1 {
                continue;
            }
            measure::<f32>(&b, op, rows, cols)?;
            measure::<Bf16>(&b, op, rows, cols)?;
        }
    }
    Ok(())
}
