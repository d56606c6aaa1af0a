//! The AdamW step and gradient clipping, each as a share of the device's copy bandwidth (the
//! driver's device-to-device copy of 1 GiB, measured in the same run). Each row is timed
//! twice, so that clock drift shows as disagreement between the passes. About 100 M
//! parameters in 100 tensors of uneven lengths, and 100 M gradients.
//!
//! ```text
//! cargo run --release -p kernels --example bench_optim          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_optim      # tiny shapes on the emulator
//! BENCH_ONLY=clip_grad_norm BENCH_RUNS=1 ncu … bench_optim       # some rows, for a profiler
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::clip;
use kernels::optim::{AdamW, AdamWConfig, AdamWState};
use kernels::Float;

/// Whether `BENCH_ONLY` leaves out the row `name`.
fn skipped(name: &str) -> bool {
    std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only))
}

/// Times `f` twice and prints one table row; `f` moves `bytes`.
fn measure(
    b: &Bench,
    op: &str,
    dtype: &str,
    shape: &str,
    bytes: f64,
    mut f: impl FnMut(&Stream) -> Res,
) -> Res {
    if skipped(&format!("{op}/{dtype}/{shape}")) {
        return Ok(());
    }
    let cells = b.percent_twice(bytes, &mut f)?;
    single_row(&format!("{op:<28} | {dtype:<4} | {shape:<11}"), cells);
    Ok(())
}

/// The AdamW rows: f32 gradients, f32 gradients clipped by a device-side norm (the norm's
/// read of the gradients counted), and bf16 gradients with a bf16 copy of the weights.
fn bench_adamw(b: &Bench) -> Res {
    let lens: Vec<usize> = if Bench::small() {
        (0..10).map(|i| 1000 + 37 * i).collect()
    } else {
        (0..100).map(|i| 900_000 + 2_000 * i + (i % 7)).collect()
    };
    let opt = AdamW::new(&b.stream, &lens, &vec![true; lens.len()])?;
    let n = opt.layout().total();
    let params_n: usize = lens.iter().sum();
    let shape = if Bench::small() {
        format!("{params_n} in {}", lens.len())
    } else {
        format!("{}M in {}", params_n / 1_000_000, lens.len())
    };
    let mut p = filled::<f32>(&b.stream, n, 31)?;
    let g = filled::<f32>(&b.stream, n, 32)?;
    let gb = filled::<Bf16>(&b.stream, n, 33)?;
    let mut m = Buffer::<f32>::zeros(&b.stream, n)?;
    let mut v = Buffer::<f32>::zeros(&b.stream, n)?;
    let mut copy = Buffer::<Bf16>::zeros(&b.stream, n)?;
    let mut ws = Buffer::<f32>::zeros(&b.stream, clip::WORKSPACE_LEN as usize)?;
    let mut ns = Buffer::<f32>::zeros(&b.stream, 2)?;
    let cfg = AdamWConfig::default();
    let pn = params_n as f64;
    measure(b, "adamw", "f32", &shape, 28.0 * pn, |s| {
        let state = AdamWState {
            params: &mut p,
            grads: &g,
            m: &mut m,
            v: &mut v,
            bf16_copy: None,
            clip: None,
        };
        opt.step(s, 3, &cfg, state)?;
        Ok(())
    })?;
    measure(
        b,
        "grad_norm + adamw clipped",
        "f32",
        &shape,
        32.0 * pn,
        |s| {
            clip::grad_norm(s, &g, 1.0, &mut ws, &mut ns)?;
            let state = AdamWState {
                params: &mut p,
                grads: &g,
                m: &mut m,
                v: &mut v,
                bf16_copy: None,
                clip: Some(&ns),
            };
            opt.step(s, 3, &cfg, state)?;
            Ok(())
        },
    )?;
    measure(b, "adamw (grads + copy)", "bf16", &shape, 28.0 * pn, |s| {
        let state = AdamWState {
            params: &mut p,
            grads: &gb,
            m: &mut m,
            v: &mut v,
            bf16_copy: Some(&mut copy),
            clip: None,
        };
        opt.step(s, 3, &cfg, state)?;
        Ok(())
    })?;
    Ok(())
}

/// The clipping rows for gradients stored as `T`.
fn bench_clip<T: Float>(b: &Bench) -> Res {
    let n = if Bench::small() {
        20_000 + 3
    } else {
        100_000_000
    };
    let shape = if Bench::small() {
        format!("{n}")
    } else {
        "100M".into()
    };
    let dtype = T::TYPE.suffix();
    let mut g = filled::<T>(&b.stream, n, 41)?;
    let mut ws = Buffer::<f32>::zeros(&b.stream, clip::WORKSPACE_LEN as usize)?;
    let mut out = Buffer::<f32>::zeros(&b.stream, 2)?;
    let t = (n * std::mem::size_of::<T>()) as f64;
    measure(b, "grad_norm", dtype, &shape, t, |s| {
        clip::grad_norm(s, &g, 1.0, &mut ws, &mut out)?;
        Ok(())
    })?;
    // max_norm far above the norm: the norm plus the scale check, no writes.
    measure(b, "clip_grad_norm (no clip)", dtype, &shape, t, |s| {
        clip::clip_grad_norm(s, &mut g, 1e30, &mut ws, &mut out)?;
        Ok(())
    })?;
    // Clipping that writes on every run: each run first restores the gradients from a pristine
    // copy (the driver's copy, 2t bytes), then clips them to a tenth of their norm (norm read,
    // scale read + write: 3t). Clipping the same buffer again would converge to a scale of 1.
    let pristine = filled::<T>(&b.stream, n, 41)?;
    measure(
        b,
        "copy + clip_grad_norm (clip)",
        dtype,
        &shape,
        5.0 * t,
        |s| {
            g.copy_from(s, &pristine)?;
            clip::clip_grad_norm(s, &mut g, 1e-2, &mut ws, &mut out)?;
            Ok(())
        },
    )?;
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("| op | dtype | shape | % copy (2 passes) |");
    println!("|---|---|---|---|");
    bench_adamw(&b)?;
    bench_clip::<f32>(&b)?;
    bench_clip::<Bf16>(&b)?;
    Ok(())
}
