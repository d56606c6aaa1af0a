//! The casts, each as a share of the device's copy bandwidth (the driver's device-to-device
//! copy of 1 GiB, measured in the same run), timed twice so that clock drift shows as
//! disagreement between the passes. Bytes: the source read and the destination written once.
//!
//! ```text
//! cargo run --release -p kernels --example bench_cast          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_cast      # tiny shapes on the emulator
//! BENCH_ONLY=bf16→f32 BENCH_RUNS=1 ncu … bench_cast            # some rows, for a profiler
//! ```

mod common;

use common::{single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, F16};
use kernels::cast::cast;
use kernels::Float;

/// A deterministic pattern in [-4, 4) of any cast element type, never all zeros.
fn filled<T: Float>(b: &Bench, n: usize, seed: u32) -> Res<Buffer<T>> {
    let f = common::filled::<f32>(&b.stream, n, seed)?;
    let mut out = Buffer::<T>::zeros(&b.stream, n)?;
    cast(&b.stream, &f, &mut out)?;
    Ok(out)
}

fn name<T: Float>() -> String {
    format!("{:?}", T::SCALAR).to_lowercase()
}

/// One table row.
fn compare<S: Float, D: Float>(b: &Bench, n: usize, shape: &str) -> Res {
    let pair = format!("{}→{}", name::<S>(), name::<D>());
    let label = format!("cast/{pair}/{shape}");
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return Ok(());
    }
    let src = filled::<S>(b, n, 21)?;
    let mut dst = Buffer::<D>::zeros(&b.stream, n)?;
    let bytes = (n * (std::mem::size_of::<S>() + std::mem::size_of::<D>())) as f64;
    let batch = batch();
    let pct = b.percent_twice(bytes * batch as f64, |s| {
        for _ in 0..batch {
            cast(s, &src, &mut dst)?;
        }
        Ok(())
    })?;
    single_row(&format!("{pair:<10} | {shape:<12}"), pct);
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
    println!("| cast | elements | % copy (2 passes) |");
    println!("|---|---|---|");
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
