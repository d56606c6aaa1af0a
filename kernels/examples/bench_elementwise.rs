//! The elementwise ops, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run), timed twice. (The builder-written
//! kernels they replaced were timed beside them here until the ports matched them on every row;
//! BENCHMARKS.md has those figures.)
//!
//! ```text
//! cargo run --release -p kernels --example bench_elementwise          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_elementwise      # tiny sizes, emulator
//! ```

mod common;

use common::{filled, single_row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::elementwise::{self as ew, MapOp};
use kernels::Float;

/// The `#[kernel]` form of `op` on the given buffers.
fn new_form<T: Float>(s: &Stream, op: MapOp, ins: &[&Buffer<T>], outs: &mut [Buffer<T>]) -> Res {
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

fn measure<T: Float>(b: &Bench, op: MapOp, n: usize) -> Res {
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
    let in_refs: Vec<&Buffer<T>> = ins.iter().take(n_in).collect();
    let cells = b.percent_twice(bytes, |s| new_form(s, op, &in_refs, &mut outs))?;
    let label = format!("{:<18} | {:<4} | {:>9}", op.name(), T::TYPE.suffix(), n);
    single_row(&label, cells);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    let small = Bench::small();
    println!("| op | dtype | n | % copy (2 passes) |");
    println!("|---|---|---|---|");
    // A size past L2 with a tail that is not a whole vector.
    let n = if small { 1003 } else { (1 << 26) + 3 };
    for op in MapOp::ALL {
        measure::<f32>(&b, op, n)?;
        measure::<Bf16>(&b, op, n)?;
    }
    Ok(())
}
