//! The row norms written in `#[kernel]` whose builder-written kernels are not yet deleted
//! (RMSNorm fused with a residual add, LayerNorm) against those kernels, side by side in one process, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each pair is timed twice,
//! alternating, so that clock drift shows as disagreement between the passes.
//!
//! ```text
//! cargo run --release -p kernels --example bench_norm          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_norm      # tiny shapes on the emulator
//! BENCH_ONLY=layer_norm/f32/4096x16384 BENCH_RUNS=1 ncu … bench_norm  # one row, for a profiler
//! ```

use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::cast::Element;
use kernels::norm;
use std::error::Error;

type Res<T = ()> = Result<T, Box<dyn Error>>;

struct Bench {
    device: Device,
    stream: Stream,
    warmup: usize,
    runs: usize,
}

impl Bench {
    /// Median milliseconds of `f` over the timed runs.
    fn time(&self, mut f: impl FnMut(&Stream) -> Res) -> Res<f64> {
        for _ in 0..self.warmup {
            f(&self.stream)?;
        }
        let mut ms = Vec::with_capacity(self.runs);
        for _ in 0..self.runs {
            let (start, end) = (self.device.event()?, self.device.event()?);
            self.stream.record(&start)?;
            f(&self.stream)?;
            self.stream.record(&end)?;
            end.synchronize()?;
            ms.push(start.elapsed_ms(&end)? as f64);
        }
        ms.sort_by(f64::total_cmp);
        Ok(ms[ms.len() / 2])
    }
}

fn filled<T: Element>(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<T>> {
    let host: Vec<T> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 - 1.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

/// The forward norms, each in its builder and its `#[kernel]` form.
#[derive(Clone, Copy)]
enum Op {
    AddRms,
    Layer,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::AddRms => "add_rms_norm",
            Op::Layer => "layer_norm",
        }
    }

    /// Matrices read plus written, in units of `rows × cols` elements.
    fn matrices(self) -> f64 {
        match self {
            Op::Layer => 2.0,
            Op::AddRms => 4.0,
        }
    }
}

/// One table row: the builder kernel and the `#[kernel]` one on the same buffers.
fn compare<T: Element>(b: &Bench, copy_gbs: f64, op: Op, rows: usize, cols: usize) -> Res {
    let name = format!("{}/{}/{rows}x{cols}", op.name(), T::STORAGE.suffix());
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return Ok(());
    }
    let n = rows * cols;
    let x = filled::<T>(&b.stream, n, 1)?;
    let r = filled::<T>(&b.stream, n, 3)?;
    let g = filled::<T>(&b.stream, cols, 2)?;
    let beta = filled::<T>(&b.stream, cols, 4)?;
    let mut sum = Buffer::<T>::zeros(&b.stream, n)?;
    let mut y = Buffer::<T>::zeros(&b.stream, n)?;
    let bytes = op.matrices() * (n * std::mem::size_of::<T>()) as f64;
    let pct = |ms: f64| 100.0 * bytes / (ms * 1e-3) / 1e9 / copy_gbs;
    let mut cells = Vec::new();
    for _pass in 0..2 {
        let mut run = |builder: bool| {
            b.time(|s| {
                match (op, builder) {
                    (Op::AddRms, true) => norm::add_rms_norm_builder(
                        s, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5,
                    )?,
                    (Op::AddRms, false) => {
                        norm::add_rms_norm(s, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5)?
                    }
                    (Op::Layer, true) => {
                        norm::layer_norm_builder(s, &x, &g, &beta, &mut y, rows, cols, 1e-5)?
                    }
                    (Op::Layer, false) => {
                        norm::layer_norm(s, &x, &g, &beta, &mut y, rows, cols, 1e-5)?
                    }
                }
                Ok(())
            })
        };
        let old = run(true)?;
        let new = run(false)?;
        cells.push((pct(old), pct(new)));
    }
    let (o, l): (Vec<f64>, Vec<f64>) = cells.iter().copied().unzip();
    println!(
        "| {:<12} | {:<4} | {:>6}x{:<5} | {:>5.1} / {:>5.1} | {:>5.1} / {:>5.1} | {:>+5.1} |",
        op.name(),
        T::STORAGE.suffix(),
        rows,
        cols,
        o[0],
        o[1],
        l[0],
        l[1],
        (l[0] + l[1] - o[0] - o[1]) / 2.0
    );
    Ok(())
}

fn main() -> Res {
    let small = std::env::var_os("BENCH_SMALL").is_some();
    let device = if small {
        Device::emulator()
    } else {
        Device::cuda(0).map_err(|e| {
            format!("no CUDA device ({e}); set BENCH_SMALL=1 to run tiny shapes on the emulator")
        })?
    };
    let stream = device.stream()?;
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok());
    let b = Bench {
        device,
        stream,
        warmup: runs.map_or(if small { 1 } else { 5 }, |_| 0),
        runs: runs.unwrap_or(if small { 3 } else { 25 }),
    };
    println!("device: {}", b.device.props().name);
    let n = if small { 1 << 14 } else { 1 << 28 };
    let src = filled::<f32>(&b.stream, n, 9)?;
    let mut dst = Buffer::<f32>::zeros(&b.stream, n)?;
    let copy_ms = b.time(|s| Ok(dst.copy_from(s, &src)?))?;
    let copy_gbs = 8.0 * n as f64 / (copy_ms * 1e-3) / 1e9;
    println!("copy bandwidth (cuMemcpyDtoD, read + write): {copy_gbs:.1} GB/s");
    drop((src, dst));
    println!("| op | dtype | rows x cols | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|---|");
    // Wide rows (a block per row), narrow rows (a warp per row), and a width that is not a
    // multiple of 16 bytes (one element per access).
    let shapes: &[(usize, usize)] = if small {
        &[(8, 256), (8, 4096), (8, 1001)]
    } else {
        &[(16384, 4096), (131072, 512), (32768, 1001), (4096, 16384)]
    };
    for op in [Op::AddRms, Op::Layer] {
        for &(rows, cols) in shapes {
            compare::<f32>(&b, copy_gbs, op, rows, cols)?;
            compare::<Bf16>(&b, copy_gbs, op, rows, cols)?;
        }
    }
    Ok(())
}
