//! Bandwidth of the elementwise, norm, optimizer and clipping ops against the device's
//! copy bandwidth, measured in one process with CUDA events (warm-up, then the median of the
//! timed runs).
//!
//! ```text
//! cargo run --release -p kernels --example bench_tensor_ops            # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_tensor_ops        # tiny shapes on the emulator
//! BENCH_ONLY=norms,clip cargo run --release -p kernels --example bench_tensor_ops   # only these groups
//! ```
//!
//! Bytes are counted minimally: what an op must read plus what it must write, once each. The
//! copy bandwidth is the driver's device-to-device copy of 1 GiB (far larger than L2). The
//! RMSNorm and LayerNorm backward are timed in `bench_norm`, beside the builder kernels.

mod common;

use common::{Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::clip;
use kernels::elementwise as ew;
use kernels::norm;
use kernels::optim::{AdamW, AdamWConfig, AdamWState};
use kernels::Float;

/// Times `f`, which moves `bytes`, and prints one table row.
fn row(
    b: &Bench,
    op: &str,
    dtype: &str,
    shape: &str,
    bytes: f64,
    f: impl FnMut(&Stream) -> Res,
) -> Res {
    let ms = b.time(f)?;
    let gbs = bytes / (ms * 1e-3) / 1e9;
    let pct = b.percent(bytes, ms);
    println!("| {op:<22} | {dtype:<5} | {shape:<18} | {ms:>9.4} | {gbs:>8.1} | {pct:>6.1}% |");
    Ok(())
}

fn filled<T: Float>(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<T>> {
    // A cheap deterministic pattern in [-1, 1), never all zeros.
    let host: Vec<T> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 - 1.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

fn dtype<T: Float>() -> &'static str {
    T::TYPE.suffix()
}

fn bench_norms<T: Float>(b: &Bench) -> Res {
    let (rows, cols) = if Bench::small() {
        (8, 256)
    } else {
        (16384, 4096)
    };
    let n = rows * cols;
    let es = std::mem::size_of::<T>() as f64;
    let shape = format!("{rows}x{cols}");
    let x = filled::<T>(&b.stream, n, 1)?;
    let g = filled::<T>(&b.stream, cols, 2)?;
    let mut y = Buffer::<T>::zeros(&b.stream, n)?;
    let matrix = n as f64 * es;
    row(b, "rms_norm", dtype::<T>(), &shape, 2.0 * matrix, |s| {
        Ok(norm::rms_norm(s, &x, &g, &mut y, rows, cols, 1e-5)?)
    })?;
    let r = filled::<T>(&b.stream, n, 3)?;
    let mut sum = Buffer::<T>::zeros(&b.stream, n)?;
    row(b, "add_rms_norm", dtype::<T>(), &shape, 4.0 * matrix, |s| {
        Ok(norm::add_rms_norm(
            s, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5,
        )?)
    })?;
    drop((r, sum));
    let beta = filled::<T>(&b.stream, cols, 5)?;
    row(b, "layer_norm", dtype::<T>(), &shape, 2.0 * matrix, |s| {
        Ok(norm::layer_norm(
            s, &x, &g, &beta, &mut y, rows, cols, 1e-5,
        )?)
    })?;
    let (tokens, heads, dim) = if Bench::small() {
        (4, 4, 128)
    } else {
        (4096, 32, 128)
    };
    let q = filled::<T>(&b.stream, tokens * heads * dim, 6)?;
    let qg = filled::<T>(&b.stream, dim, 7)?;
    let mut qo = Buffer::<T>::zeros(&b.stream, tokens * heads * dim)?;
    let qshape = format!("{tokens}x{heads}x{dim}");
    let qbytes = 2.0 * (tokens * heads * dim) as f64 * es;
    row(b, "rms_norm_heads", dtype::<T>(), &qshape, qbytes, |s| {
        Ok(norm::rms_norm_heads(
            s, &q, &qg, &mut qo, tokens, heads, dim, 1e-6,
        )?)
    })?;
    Ok(())
}

fn bench_elementwise<T: Float>(b: &Bench) -> Res {
    let n = if Bench::small() {
        4096 + 3
    } else {
        16384 * 4096
    };
    let shape = if Bench::small() {
        format!("{n}")
    } else {
        "16384x4096".into()
    };
    let t = n as f64 * std::mem::size_of::<T>() as f64;
    let dt = dtype::<T>();
    let x = filled::<T>(&b.stream, n, 11)?;
    let u = filled::<T>(&b.stream, n, 12)?;
    let d = filled::<T>(&b.stream, n, 13)?;
    let mut o = Buffer::<T>::zeros(&b.stream, n)?;
    let mut o2 = Buffer::<T>::zeros(&b.stream, n)?;
    row(b, "add", dt, &shape, 3.0 * t, |s| {
        Ok(ew::add(s, &x, &u, &mut o)?)
    })?;
    row(b, "mul", dt, &shape, 3.0 * t, |s| {
        Ok(ew::mul(s, &x, &u, &mut o)?)
    })?;
    row(b, "scale", dt, &shape, 2.0 * t, |s| {
        Ok(ew::scale(s, &x, 0.5, &mut o)?)
    })?;
    row(b, "silu", dt, &shape, 2.0 * t, |s| {
        Ok(ew::silu(s, &x, &mut o)?)
    })?;
    row(b, "gelu_tanh", dt, &shape, 2.0 * t, |s| {
        Ok(ew::gelu_tanh(s, &x, &mut o)?)
    })?;
    row(b, "gelu_tanh_backward", dt, &shape, 3.0 * t, |s| {
        Ok(ew::gelu_tanh_backward(s, &x, &d, &mut o)?)
    })?;
    row(b, "swiglu", dt, &shape, 3.0 * t, |s| {
        Ok(ew::swiglu(s, &x, &u, &mut o)?)
    })?;
    row(b, "swiglu_backward", dt, &shape, 5.0 * t, |s| {
        Ok(ew::swiglu_backward(s, &x, &u, &d, &mut o, &mut o2)?)
    })?;
    Ok(())
}

fn bench_adamw(b: &Bench) -> Res {
    // ~100 M parameters in 100 tensors of uneven sizes (small: 10 tensors).
    let lens: Vec<usize> = if Bench::small() {
        (0..10).map(|i| 1000 + 37 * i).collect()
    } else {
        (0..100).map(|i| 900_000 + 2_000 * i + (i % 7)).collect()
    };
    let opt = AdamW::new(&b.stream, &lens, &vec![true; lens.len()])?;
    let n = opt.layout().total();
    let params_n: usize = lens.iter().sum();
    let shape = format!("{}M in {}", params_n / 1_000_000, lens.len());
    let shape = if Bench::small() {
        format!("{params_n} in {}", lens.len())
    } else {
        shape
    };
    let mut p = filled::<f32>(&b.stream, n, 31)?;
    let g = filled::<f32>(&b.stream, n, 32)?;
    let gb = filled::<Bf16>(&b.stream, n, 33)?;
    let mut m = Buffer::<f32>::zeros(&b.stream, n)?;
    let mut v = Buffer::<f32>::zeros(&b.stream, n)?;
    let mut copy = Buffer::<Bf16>::zeros(&b.stream, n)?;
    let cfg = AdamWConfig::default();
    let pn = params_n as f64;
    row(b, "adamw (f32 grads)", "f32", &shape, 28.0 * pn, |s| {
        let state = AdamWState {
            params: &mut p,
            grads: &g,
            m: &mut m,
            v: &mut v,
            bf16_copy: None,
            clip: None,
        };
        Ok(opt.step(s, 3, &cfg, state)?)
    })?;
    let mut ws = Buffer::<f32>::zeros(&b.stream, clip::WORKSPACE_LEN as usize)?;
    let mut ns = Buffer::<f32>::zeros(&b.stream, 2)?;
    // Clipping fused into the step: one read of the gradients for the norm, then the step.
    row(
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
            Ok(opt.step(s, 3, &cfg, state)?)
        },
    )?;
    row(
        b,
        "adamw (bf16 grads+copy)",
        "bf16",
        &shape,
        28.0 * pn,
        |s| {
            let state = AdamWState {
                params: &mut p,
                grads: &gb,
                m: &mut m,
                v: &mut v,
                bf16_copy: Some(&mut copy),
                clip: None,
            };
            Ok(opt.step(s, 3, &cfg, state)?)
        },
    )?;
    Ok(())
}

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
    let mut g = filled::<T>(&b.stream, n, 41)?;
    let mut ws = Buffer::<f32>::zeros(&b.stream, clip::WORKSPACE_LEN as usize)?;
    let mut out = Buffer::<f32>::zeros(&b.stream, 2)?;
    let t = n as f64 * std::mem::size_of::<T>() as f64;
    row(b, "grad_norm", dtype::<T>(), &shape, t, |s| {
        Ok(clip::grad_norm(s, &g, 1.0, &mut ws, &mut out)?)
    })?;
    // max_norm far above the norm: measures the norm plus the scale check, no writes.
    row(
        b,
        "clip_grad_norm (no clip)",
        dtype::<T>(),
        &shape,
        t,
        |s| Ok(clip::clip_grad_norm(s, &mut g, 1e30, &mut ws, &mut out)?),
    )?;
    // Clipping that writes on every run: each run first restores the gradients from a pristine
    // copy (the driver's copy, 2t bytes), then clips them to a tenth of their norm (norm read,
    // scale read + write: 3t). Clipping the same buffer repeatedly would converge to a scale of
    // exactly 1, which writes nothing.
    let pristine = filled::<T>(&b.stream, n, 41)?;
    row(
        b,
        "copy + clip_grad_norm (clip)",
        dtype::<T>(),
        &shape,
        5.0 * t,
        |s| {
            g.copy_from(s, &pristine)?;
            Ok(clip::clip_grad_norm(s, &mut g, 1e-2, &mut ws, &mut out)?)
        },
    )?;
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!(
        "| op                     | dtype | shape              |        ms |     GB/s | % copy |"
    );
    println!(
        "|------------------------|-------|--------------------|-----------|----------|--------|"
    );
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |group: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|g| g == group))
    };
    if wanted("norms") {
        bench_norms::<f32>(&b)?;
        bench_norms::<Bf16>(&b)?;
    }
    if wanted("elementwise") {
        bench_elementwise::<f32>(&b)?;
        bench_elementwise::<Bf16>(&b)?;
    }
    if wanted("adamw") {
        bench_adamw(&b)?;
    }
    if wanted("clip") {
        bench_clip::<f32>(&b)?;
        bench_clip::<Bf16>(&b)?;
    }
    Ok(())
}
