//! RMSNorm as a user writes it with `#[kernel]`: the README's "Writing kernels" example. One
//! block per row; each thread holds four 16-byte vectors of its row in registers between the
//! sum of squares and the write, so the row is read once.
//!
//! ```text
//! cargo run --release --example rms_norm                  # check, then time on a GPU
//! cargo run --release --example rms_norm -- --ptx sm_90   # print the PTX and ptxas's report
//! ```
//!
//! On a GPU it checks the result against the CPU and prints its bandwidth as a share of the
//! device's copy bandwidth, measured in the same process; on the emulator it only checks.

use ptxkit::dsl::ptxas::Ptxas;
use ptxkit::dsl::Target;
use ptxkit::prelude::*;
use ptxkit::runtime::{Bf16, Buffer, Device, DeviceKind, Element, LaunchConfig, Stream};

/// Vectors of 16 bytes each thread holds.
const HELD: u32 = 4;

/// `y[r, :] = x[r, :] / √(mean(x[r, :]²) + eps) · γ`, one block per row. Needs `cols` to be a
/// multiple of `T::VEC` and at most `4 · T::VEC` per thread.
#[kernel(instances(T in [f32, bf16]))]
pub fn rms_norm<T: Element>(x: &[T], gamma: &[T], y: &mut [T], cols: u32, eps: f32) {
    let t = thread_idx().x;
    let base = block_idx().x * cols;
    let mut held = [0.0f32; { 4 * T::VEC }];
    let mut ss = 0.0f32;
    for h in 0..4 {
        let i = (h * block_dim().x + t) * T::VEC;
        // Vectors past the row's end are not read; they hold zeros.
        let v = x.load_vec_or::<{ T::VEC }>(base + i, i < cols, 0.0 as T);
        for k in 0..T::VEC {
            held[h * T::VEC + k] = v[k] as f32;
            ss = held[h * T::VEC + k].mul_add(held[h * T::VEC + k], ss);
        }
    }
    // The block's sum: each warp's, then the warps' partials.
    for d in [16, 8, 4, 2, 1] {
        ss += shfl_xor(ss, d);
    }
    let partial = shared_array::<f32, 32>();
    if t % 32 == 0 {
        partial[t / 32] = ss;
    }
    sync_threads();
    ss = if t % 32 < block_dim().x / 32 {
        partial[t % 32]
    } else {
        0.0
    };
    for d in [16, 8, 4, 2, 1] {
        ss += shfl_xor(ss, d);
    }
    let rstd = (ss / cols as f32 + eps).rsqrt_rn();
    for h in 0..4 {
        let i = (h * block_dim().x + t) * T::VEC;
        if i < cols {
            let mut out = gamma.load_vec::<{ T::VEC }>(i);
            for k in 0..T::VEC {
                out[k] = (held[h * T::VEC + k] * rstd * (out[k] as f32)) as T;
            }
            y.store_vec::<{ T::VEC }>(base + i, out);
        }
    }
}

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Host side: checks the shape, then launches through the generated launcher, which picks the
/// `T` instance.
fn launch<T: Element>(
    s: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
) -> Res {
    let vec = 16 / std::mem::size_of::<T>();
    let threads = cols.div_ceil(HELD as usize * vec).div_ceil(32) * 32;
    if !cols.is_multiple_of(vec) || threads > 1024 || x.len() != rows * cols || gamma.len() != cols
    {
        return Err(format!(
            "rms_norm needs cols a multiple of {vec} and at most {} (got {cols}), x of rows × cols and γ of cols",
            1024 * HELD as usize * vec
        )
        .into());
    }
    let cfg = LaunchConfig::linear(rows as u32, threads as u32);
    rms_norm::<T>(s, cfg, x, gamma, y, cols as u32, 1e-5)?;
    Ok(())
}

fn pattern(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 8388608.0
                - 1.0
        })
        .collect()
}

/// Runs both instances at `rows × cols`, checks them against the CPU, and returns the median
/// milliseconds of each (f32, bf16).
fn check_and_time(device: &Device, rows: usize, cols: usize, runs: usize) -> Res<(f64, f64)> {
    let s = device.stream()?;
    let (x, g) = (pattern(rows * cols, 1), pattern(cols, 2));
    let mut want = vec![0.0f64; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let ms = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (ms + 1e-5).sqrt();
        for c in 0..cols {
            want[r * cols + c] = row[c] as f64 * rstd * g[c] as f64;
        }
    }
    let time = |f: &mut dyn FnMut() -> Res| -> Res<f64> {
        let mut ms = Vec::new();
        for _ in 0..runs {
            let (a, b) = (device.event()?, device.event()?);
            s.record(&a)?;
            f()?;
            s.record(&b)?;
            b.synchronize()?;
            ms.push(a.elapsed_ms(&b)? as f64);
        }
        ms.sort_by(f64::total_cmp);
        Ok(ms[ms.len() / 2])
    };

    let (dx, dg) = (Buffer::from_host(&s, &x)?, Buffer::from_host(&s, &g)?);
    let mut dy = Buffer::<f32>::zeros(&s, rows * cols)?;
    let f32_ms = time(&mut || launch(&s, &dx, &dg, &mut dy, rows, cols))?;
    for (k, got) in dy.to_host(&s)?.into_iter().enumerate() {
        if (got as f64 - want[k]).abs() > 1e-4 * want[k].abs().max(1.0) {
            return Err(format!("f32 at {k}: {got} against {}", want[k]).into());
        }
    }
    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let gb: Vec<Bf16> = g.iter().map(|&v| Bf16::from_f32(v)).collect();
    let (dx, dg) = (Buffer::from_host(&s, &xb)?, Buffer::from_host(&s, &gb)?);
    let mut dy = Buffer::<Bf16>::zeros(&s, rows * cols)?;
    let bf16_ms = time(&mut || launch(&s, &dx, &dg, &mut dy, rows, cols))?;
    for (k, got) in dy.to_host(&s)?.into_iter().enumerate() {
        // bf16 inputs and output: within a few of bf16's ulps.
        if (got.to_f32() as f64 - want[k]).abs() > 3e-2 * want[k].abs().max(1.0) {
            return Err(format!("bf16 at {k}: {} against {}", got.to_f32(), want[k]).into());
        }
    }
    Ok((f32_ms, bf16_ms))
}

fn main() -> Res {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, target] = args.as_slice() {
        if flag == "--ptx" {
            // What was embedded for one target, and what ptxas makes of it.
            let target: Target = target.parse()?;
            let ptx = (RMS_NORM__F32.emit.ok_or("no emitter")?)(target)?;
            println!("{ptx}");
            match Ptxas::find() {
                Some(p) => {
                    for r in p.assemble(&ptx)?.reports {
                        println!(
                            "// {}: {} registers, {} bytes spilled, {} bytes shared",
                            r.entry, r.registers, r.spill_stores, r.shared_bytes
                        );
                    }
                }
                None => println!("// no ptxas found: set PTXKIT_PTXAS or put ptxas on PATH"),
            }
            return Ok(());
        }
    }
    let device = Device::best();
    if device.props().kind == DeviceKind::Emulator {
        check_and_time(&device, 3, 1000, 1)?;
        println!("rms_norm matches the CPU on the emulator (3 × 1000, f32 and bf16)");
        return Ok(());
    }
    let (rows, cols) = (16384, 4096);
    check_and_time(&device, 4, 4096, 1)?;
    let (f32_ms, bf16_ms) = check_and_time(&device, rows, cols, 25)?;
    // The device's copy bandwidth, in the same process: the driver's copy of 1 GiB.
    let s = device.stream()?;
    let n = 1 << 28;
    let src = Buffer::<f32>::zeros(&s, n)?;
    let mut dst = Buffer::<f32>::zeros(&s, n)?;
    let mut ms = Vec::new();
    for _ in 0..10 {
        let (a, b) = (device.event()?, device.event()?);
        s.record(&a)?;
        dst.copy_from(&s, &src)?;
        s.record(&b)?;
        b.synchronize()?;
        ms.push(a.elapsed_ms(&b)? as f64);
    }
    ms.sort_by(f64::total_cmp);
    let copy = 8.0 * n as f64 / (ms[5] * 1e-3);
    for (name, ms, bytes) in [("f32", f32_ms, 4.0), ("bf16", bf16_ms, 2.0)] {
        let moved = 2.0 * bytes * (rows * cols) as f64;
        println!(
            "rms_norm {name} {rows} x {cols}: {ms:.4} ms, {:.1}% of copy bandwidth ({:.0} GB/s)",
            100.0 * moved / (ms * 1e-3) / copy,
            copy / 1e9
        );
    }
    Ok(())
}
