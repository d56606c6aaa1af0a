//! RoPE forward and backward as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run), timed twice so that clock drift
//! shows as disagreement between the passes. Bytes: `x` read and `y` written once, plus the
//! positions.
//!
//! ```text
//! cargo run --release -p kernels --example bench_rope          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_rope      # tiny shapes on the emulator
//! BENCH_ONLY=rope/bf16/NeoX BENCH_RUNS=1 ncu … bench_rope      # some rows, for a profiler
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::rope::{self, Rope, RopeLayout};
use kernels::Float;

/// One table row.
fn measure<T: Float>(
    b: &Bench,
    backward: bool,
    layout: RopeLayout,
    [tokens, heads, head_dim, rotary_dim]: [usize; 4],
) -> Res {
    let op = if backward { "rope_backward" } else { "rope" };
    let shape = format!("{tokens}x{heads}x{head_dim}/{rotary_dim}");
    let name = format!("{op}/{}/{layout:?}/{shape}", T::TYPE.suffix());
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return Ok(());
    }
    let n = tokens * heads * head_dim;
    let x = filled::<T>(&b.stream, n, 5)?;
    let positions: Vec<u32> = (0..tokens as u32).collect();
    let positions = Buffer::from_host(&b.stream, &positions)?;
    let mut y = Buffer::<T>::zeros(&b.stream, n)?;
    let spec = Rope {
        layout,
        theta: 10000.0,
        rotary_dim,
    };
    let bytes = (2 * n * std::mem::size_of::<T>() + 4 * tokens) as f64;
    let batch = batch();
    let pct = |ms: f64| b.percent(bytes * batch as f64, ms);
    let dims = (tokens, heads, head_dim);
    let mut cells = [0.0; 2];
    for cell in &mut cells {
        let ms = b.time(|s| {
            for _ in 0..batch {
                let (t, h, d) = dims;
                let p = &positions;
                if backward {
                    rope::rope_backward(s, &x, p, &mut y, t, h, d, spec)?;
                } else {
                    rope::rope(s, &x, p, &mut y, t, h, d, spec)?;
                }
            }
            Ok(())
        })?;
        *cell = pct(ms);
    }
    let label = format!(
        "{:<13} | {:<4} | {:<11} | {:<16}",
        op,
        T::TYPE.suffix(),
        format!("{layout:?}"),
        shape
    );
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
    println!("| op | dtype | layout | tokens x heads x head_dim / rotary | % copy (2 passes) |");
    println!("|---|---|---|---|---|");
    // The k2 suite's shape (Llama-like: 32 heads of 128, all rotated), a partial rotary one
    // (half of each head passes through), and an odd head size (one element per access).
    let shapes: &[[usize; 4]] = if Bench::small() {
        &[[5, 4, 128, 128], [5, 4, 128, 64], [3, 3, 34, 34]]
    } else {
        &[
            [4096, 32, 128, 128],
            [4096, 32, 128, 64],
            [4096, 32, 34, 34],
        ]
    };
    for &shape in shapes {
        for layout in [RopeLayout::NeoX, RopeLayout::Interleaved] {
            measure::<f32>(&b, false, layout, shape)?;
            measure::<Bf16>(&b, false, layout, shape)?;
        }
        measure::<f32>(&b, true, RopeLayout::NeoX, shape)?;
        measure::<Bf16>(&b, true, RopeLayout::NeoX, shape)?;
    }
    Ok(())
}
