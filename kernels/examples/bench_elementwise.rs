//! The elementwise ops written in `#[kernel]` against the builder-written kernels they replace,
//! side by side in one process, each as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run). Each pair is timed twice,
//! alternating.
//!
//! ```text
//! cargo run --release -p kernels --example bench_elementwise          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_elementwise      # tiny sizes, emulator
//! ```

mod common;

use common::{filled, row, Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::cast::Element;
use kernels::elementwise::{self as ew, MapOp};

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

fn compare<T: Element>(b: &Bench, op: MapOp, n: usize) -> Res {
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
    let pct = |ms: f64| b.percent(bytes, ms);
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
    let label = format!("{:<18} | {:<4} | {:>9}", op.name(), T::STORAGE.suffix(), n);
    row(&label, &cells);
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    let small = Bench::small();
    println!("| op | dtype | n | builder % copy (2 passes) | #[kernel] % copy (2 passes) | mean diff (points) |");
    println!("|---|---|---|---|---|---|");
    // A size past L2 with a tail that is not a whole vector.
    let n = if small { 1003 } else { (1 << 26) + 3 };
    for op in MapOp::ALL {
        compare::<f32>(&b, op, n)?;
        compare::<Bf16>(&b, op, n)?;
    }
    Ok(())
}
