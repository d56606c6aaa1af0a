//! The elementwise ops written in `#[kernel]` against the builder-written kernels they replace,
//! side by side in one process, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each pair is timed twice,
//! alternating.
//!
//! ```text
//! cargo run --release -p kernels --example bench_elementwise          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_elementwise      # tiny sizes, emulator
//! ```

use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::cast::Element;
use kernels::elementwise::{self as ew, MapOp};
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
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 * 8.0 - 4.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

/// The `#[kernel]` form of `op` on the given buffers.
fn new_form<T: Element>(s: &Stream, op: MapOp, ins: &[&Buffer<T>], outs: &mut [Buffer<T>]) -> Res {
    let [o0, o1] = outs else {
        return Err("two output buffers".into());
    };
    match op {
        MapOp::Add => ew::add(s, ins[0], ins[1], o0)?,
        MapOp::Mul => ew::mul(s, ins[0], ins[1], o0)?,
        MapOp::Scale => ew::scale(s, ins[0], 0.5, o0)?,
        MapOp::Silu => ew::silu(s, ins[0], o0)?,
        MapOp::SiluBackward => ew::silu_backward(s, ins[0], ins[1], o0)?,
        MapOp::GeluTanh => ew::gelu_tanh(s, ins[0], o0)?,
        MapOp::GeluTanhBackward => ew::gelu_tanh_backward(s, ins[0], ins[1], o0)?,
        MapOp::Swiglu => ew::swiglu(s, ins[0], ins[1], o0)?,
        MapOp::SwigluBackward => ew::swiglu_backward(s, ins[0], ins[1], ins[2], o0, o1)?,
    }
    Ok(())
}

fn compare<T: Element>(b: &Bench, copy_gbs: f64, op: MapOp, n: usize) -> Res {
    let (n_in, n_out) = match op {
        MapOp::Scale | MapOp::Silu | MapOp::GeluTanh => (1, 1),
        MapOp::SwigluBackward => (3, 2),
        _ => (2, 1),
    };
    let ins: Vec<Buffer<T>> = (0..3)
        .map(|k| filled::<T>(&b.stream, n, k + 1))
        .collect::<Res<_>>()?;
    let mut outs = vec![
        Buffer::<T>::zeros(&b.stream, n)?,
        Buffer::<T>::zeros(&b.stream, n)?,
    ];
    let bytes = ((n_in + n_out) * n * std::mem::size_of::<T>()) as f64;
    let pct = |ms: f64| 100.0 * bytes / (ms * 1e-3) / 1e9 / copy_gbs;
    let in_refs: Vec<&Buffer<T>> = ins.iter().take(n_in).collect();
    let scalars: &[f32] = if matches!(op, MapOp::Scale) {
        &[0.5]
    } else {
        &[]
    };
    let mut cells = Vec::new();
    for _pass in 0..2 {
        let old = b.time(|s| {
            let (o0, rest) = outs.split_at_mut(1);
            let mut o: Vec<&mut Buffer<T>> = vec![&mut o0[0]];
            if n_out == 2 {
                o.push(&mut rest[0]);
            }
            Ok(ew::run_builder(s, op, &in_refs, &mut o, scalars)?)
        })?;
        let new = b.time(|s| new_form(s, op, &in_refs, &mut outs))?;
        cells.push((pct(old), pct(new)));
    }
    println!(
        "| {:<18} | {:<4} | {:>9} | {:>5.1} / {:>5.1} | {:>5.1} / {:>5.1} | {:>+5.1} |",
        op.name(),
        T::STORAGE.suffix(),
        n,
        cells[0].0,
        cells[1].0,
        cells[0].1,
        cells[1].1,
        (cells[0].1 + cells[1].1 - cells[0].0 - cells[1].0) / 2.0
    );
    Ok(())
}

fn main() -> Res {
    let small = std::env::var_os("BENCH_SMALL").is_some();
    let device = if small {
        Device::emulator()
    } else {
        Device::cuda(0).map_err(|e| {
            format!("no CUDA device ({e}); set BENCH_SMALL=1 to run tiny sizes on the emulator")
        })?
    };
    let stream = device.stream()?;
    let b = Bench {
        device,
        stream,
        warmup: if small { 1 } else { 5 },
        runs: if small { 3 } else { 25 },
    };
    println!("device: {}", b.device.props().name);
    let n = if small { 1 << 14 } else { 1 << 28 };
    let src = filled::<f32>(&b.stream, n, 9)?;
    let mut dst = Buffer::<f32>::zeros(&b.stream, n)?;
    let copy_ms = b.time(|s| Ok(dst.copy_from(s, &src)?))?;
    let copy_gbs = 8.0 * n as f64 / (copy_ms * 1e-3) / 1e9;
    println!("copy bandwidth (cuMemcpyDtoD, read + write): {copy_gbs:.1} GB/s");
    drop((src, dst));
    println!("| op | dtype | n | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|---|");
    // A size past L2 with a tail that is not a whole vector.
    let n = if small { 1003 } else { (1 << 26) + 3 };
    for op in MapOp::ALL {
        compare::<f32>(&b, copy_gbs, op, n)?;
        compare::<Bf16>(&b, copy_gbs, op, n)?;
    }
    Ok(())
}
