//! What the side-by-side benchmarks share: a device and stream, CUDA-event timing (warm-up,
//! then the median), deterministic inputs, and the copy bandwidth every figure is a share of.
// Each bench uses what it needs of this module.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Device, Stream};
use kernels::Float;
use std::error::Error;

pub type Res<T = ()> = Result<T, Box<dyn Error>>;

pub struct Bench {
    pub device: Device,
    pub stream: Stream,
    pub warmup: usize,
    pub runs: usize,
    /// The driver's device-to-device copy, read + write, in GB/s.
    pub copy_gbs: f64,
}

impl Bench {
    /// The GPU, or the emulator with tiny sizes when `BENCH_SMALL` is set; `BENCH_RUNS` sets
    /// the timed runs (and drops the warm-up), for a profiler. Measures the copy bandwidth.
    pub fn new() -> Res<Bench> {
        let small = Bench::small();
        let device = if small {
            Device::emulator()
        } else {
            Device::cuda(0).map_err(|e| {
                format!("no CUDA device ({e}); set BENCH_SMALL=1 to run tiny sizes on the emulator")
            })?
        };
        let stream = device.stream()?;
        let runs = std::env::var("BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok());
        let mut b = Bench {
            device,
            stream,
            warmup: runs.map_or(if small { 1 } else { 5 }, |_| 0),
            runs: runs.unwrap_or(if small { 3 } else { 25 }),
            copy_gbs: 0.0,
        };
        println!("device: {}", b.device.props().name);
        let n = if small { 1 << 14 } else { 1 << 28 };
        let src = filled::<f32>(&b.stream, n, 9)?;
        let mut dst = Buffer::<f32>::zeros(&b.stream, n)?;
        let copy_ms = b.time(|s| Ok(dst.copy_from(s, &src)?))?;
        b.copy_gbs = 8.0 * n as f64 / (copy_ms * 1e-3) / 1e9;
        println!(
            "copy bandwidth (cuMemcpyDtoD, read + write): {:.1} GB/s",
            b.copy_gbs
        );
        Ok(b)
    }

    /// Whether this run is the emulator's tiny one.
    pub fn small() -> bool {
        std::env::var_os("BENCH_SMALL").is_some()
    }

    /// Median milliseconds of `f` over the timed runs.
    pub fn time(&self, mut f: impl FnMut(&Stream) -> Res) -> Res<f64> {
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

    /// `f`, which moves `bytes`, timed twice: each pass as a percentage of the copy bandwidth
    /// (two passes, so that clock drift shows as disagreement between them).
    pub fn percent_twice(&self, bytes: f64, mut f: impl FnMut(&Stream) -> Res) -> Res<[f64; 2]> {
        let first = self.percent(bytes, self.time(&mut f)?);
        let second = self.percent(bytes, self.time(&mut f)?);
        Ok([first, second])
    }

    /// `bytes` moved in `ms` as a percentage of the copy bandwidth.
    pub fn percent(&self, bytes: f64, ms: f64) -> f64 {
        100.0 * bytes / (ms * 1e-3) / 1e9 / self.copy_gbs
    }
}

/// A deterministic pattern in [-4, 4), never all zeros.
pub fn filled<T: Float>(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<T>> {
    let host: Vec<T> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 * 8.0 - 4.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

/// One table row of an op with one form: its percentages of two passes.
pub fn single_row(label: &str, [first, second]: [f64; 2]) {
    println!("| {label} | {first:>5.1} / {second:>5.1} |");
}

/// One table row: the builder and `#[kernel]` percentages of two passes and their mean
/// difference.
pub fn row(label: &str, cells: &[(f64, f64)]) {
    let (o, l): (Vec<f64>, Vec<f64>) = cells.iter().copied().unzip();
    println!(
        "| {label} | {:>5.1} / {:>5.1} | {:>5.1} / {:>5.1} | {:>+5.1} |",
        o[0],
        o[1],
        l[0],
        l[1],
        (l[0] + l[1] - o[0] - o[1]) / 2.0
    );
}

/// Median milliseconds of `launch`, a vendor library's call on its own cudarc stream, timed
/// with that stream's CUDA events after `warmup` untimed calls: the other side of a
/// side-by-side GEMM figure.
pub fn vendor_median_ms(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    warmup: usize,
    runs: usize,
    mut launch: impl FnMut() -> Res,
) -> Res<f64> {
    for _ in 0..warmup {
        launch()?;
    }
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = ctx.new_event(flags)?;
        let end = ctx.new_event(flags)?;
        start.record(stream)?;
        launch()?;
        end.record(stream)?;
        end.synchronize()?;
        ms.push(start.elapsed_ms(&end)? as f64);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms[ms.len() / 2])
}
