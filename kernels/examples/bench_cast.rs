//! The casts written in `#[kernel]` against the builder-written kernel they replace, side by
//! side in one process, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each pair is timed twice,
//! alternating, so that clock drift shows as disagreement between the passes. Bytes: the
//! source read and the destination written once.
//!
//! ```text
//! cargo run --release -p kernels --example bench_cast          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_cast      # tiny shapes on the emulator
//! BENCH_ONLY=bf16→f32 BENCH_RUNS=1 ncu … bench_cast            # some rows, for a profiler
//! ```

mod common;

use common::{row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, F16};
use kernels::cast::{cast, cast_builder, CastElem};

/// A deterministic pattern in [-4, 4) of any cast element type, never all zeros.
fn filled<T: CastElem>(b: &Bench, n: usize, seed: u32) -> Res<Buffer<T>> {
    let f = common::filled::<f32>(&b.stream, n, seed)?;
    let mut out = Buffer::<T>::zeros(&b.stream, n)?;
    cast(&b.stream, &f, &mut out)?;
    Ok(out)
}

fn name<T: CastElem>() -> String {
    format!("{:?}", T::SCALAR).to_lowercase()
}

/// One table row: the builder kernel and the `#[kernel]` one on the same buffers.
fn compare<S: CastElem, D: CastElem>(b: &Bench, n: usize, shape: &str) -> Res {
    let pair = format!("{}→{}", name::<S>(), name::<D>());
    let label = format!("cast/{pair}/{shape}");
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return Ok(());
    }
    let src = filled::<S>(b, n, 21)?;
    let mut dst = Buffer::<D>::zeros(&b.stream, n)?;
    let bytes = (n * (std::mem::size_of::<S>() + std::mem::size_of::<D>())) as f64;
    let batch = batch();
    let pct = |ms: f64| b.percent(bytes * batch as f64, ms);
    let mut cells = Vec::new();
    for _pass in 0..2 {
        let mut run = |builder: bool| {
            b.time(|s| {
                for _ in 0..batch {
                    if builder {
                        cast_builder(s, &src, &mut dst)?;
                    } else {
                        cast(s, &src, &mut dst)?;
                    }
                }
                Ok(())
            })
        };
        let old = run(true)?;
        let new = run(false)?;
        cells.push((pct(old), pct(new)));
    }
    row(&format!("{pair:<10} | {shape:<12}"), &cells);
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
    println!("| cast | elements | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|");
    // A 1 GiB f32 copy (the copy reference's own size), a 16384 × 4096 activation in every
    // pair, and a length that ends in a partial tile.
    let (copy, n, odd) = if Bench::small() {
        (1 << 14, 4096 + 5, 3 * 4096 + 1001)
    } else {
        (1 << 28, 16384 * 4096, 16384 * 4096 + 1001)
    };
    let shape = |n: usize| {
        if n == 16384 * 4096 {
            "16384x4096".to_string()
        } else {
            n.to_string()
        }
    };
    compare::<f32, f32>(&b, copy, &shape(copy))?;
    for n in [n, odd] {
        let s = shape(n);
        compare::<f32, Bf16>(&b, n, &s)?;
        compare::<Bf16, f32>(&b, n, &s)?;
        compare::<f32, F16>(&b, n, &s)?;
        compare::<F16, f32>(&b, n, &s)?;
        compare::<Bf16, Bf16>(&b, n, &s)?;
        compare::<Bf16, F16>(&b, n, &s)?;
        compare::<F16, Bf16>(&b, n, &s)?;
    }
    Ok(())
}
