//! The row norms written in `#[kernel]` (RMSNorm fused with a residual add, the RMSNorm and
//! LayerNorm backward with their column sums), each as a share of the device's copy bandwidth
//! (the driver's device-to-device copy of 1 GiB, measured in the same run). Each op is timed
//! twice, so that clock drift shows as disagreement between the passes. Their builder kernels
//! are deleted; BENCHMARKS.md keeps the side-by-side figures that preceded each deletion.
//!
//! ```text
//! cargo run --release -p kernels --example bench_norm          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_norm      # tiny shapes on the emulator
//! BENCH_ONLY=layer_norm/f32/4096x16384 BENCH_RUNS=1 ncu … bench_norm  # one row, for a profiler
//! ```

mod common;

use common::{filled, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::norm;
use kernels::Float;

/// The norms timed.
#[derive(Clone, Copy)]
enum Op {
    AddRms,
    RmsBackward,
    LayerBackward,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::AddRms => "add_rms_norm",
            Op::RmsBackward => "rms_norm_backward",
            Op::LayerBackward => "layer_norm_backward",
        }
    }

    /// Matrices read plus written, in units of `rows × cols` elements (the backward: x and dy
    /// read, dx written; the workspace and the γ/β gradients are not counted).
    fn matrices(self) -> f64 {
        match self {
            Op::AddRms => 4.0,
            Op::RmsBackward | Op::LayerBackward => 3.0,
        }
    }
}

/// One table row: the op's share of copy bandwidth, twice.
fn measure<T: Float>(b: &Bench, op: Op, rows: usize, cols: usize) -> Res {
    let name = format!("{}/{}/{rows}x{cols}", op.name(), T::TYPE.suffix());
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return Ok(());
    }
    let n = rows * cols;
    let x = filled::<T>(&b.stream, n, 1)?;
    let r = filled::<T>(&b.stream, n, 3)?;
    let g = filled::<T>(&b.stream, cols, 2)?;
    let mut sum = Buffer::<T>::zeros(&b.stream, n)?;
    let mut y = Buffer::<T>::zeros(&b.stream, n)?;
    // The backward reads `r` as dy and writes dx to `y`.
    let mut dg = Buffer::<T>::zeros(&b.stream, cols)?;
    let mut db = Buffer::<T>::zeros(&b.stream, cols)?;
    let mut ws = Buffer::<f32>::zeros(&b.stream, norm::layer_norm_backward_workspace(rows, cols))?;
    let bytes = op.matrices() * (n * std::mem::size_of::<T>()) as f64;
    let [first, second] = b.percent_twice(bytes, |s| {
        match op {
            Op::AddRms => norm::add_rms_norm(s, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5)?,
            Op::RmsBackward => {
                norm::rms_norm_backward(s, &x, &g, &r, &mut y, &mut dg, &mut ws, rows, cols, 1e-5)?
            }
            Op::LayerBackward => norm::layer_norm_backward(
                s, &x, &g, &r, &mut y, &mut dg, &mut db, &mut ws, rows, cols, 1e-5,
            )?,
        }
        Ok(())
    })?;
    println!(
        "| {:<19} | {:<4} | {:>6}x{:<5} | {first:>5.1} / {second:>5.1} |",
        op.name(),
        T::TYPE.suffix(),
        rows,
        cols
    );
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    let small = Bench::small();
    println!("| op | dtype | rows x cols | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // Wide rows (a block per row), narrow rows (a warp per row), and widths that are not a
    // multiple of 16 bytes (one element per access), narrow and wide.
    let shapes: &[(usize, usize)] = if small {
        &[(8, 256), (8, 4096), (8, 1001)]
    } else {
        &[
            (16384, 4096),
            (131072, 512),
            (32768, 1001),
            (4096, 16384),
            (4096, 12001),
        ]
    };
    for &(rows, cols) in shapes {
        measure::<f32>(&b, Op::AddRms, rows, cols)?;
        measure::<Bf16>(&b, Op::AddRms, rows, cols)?;
    }
    // The backward rows time the row kernel and its column sums together, as the op runs.
    let backward: &[(usize, usize)] = if small { &[(8, 256)] } else { &[(16384, 4096)] };
    for op in [Op::RmsBackward, Op::LayerBackward] {
        for &(rows, cols) in backward {
            measure::<f32>(&b, op, rows, cols)?;
            measure::<Bf16>(&b, op, rows, cols)?;
        }
    }
    Ok(())
}
