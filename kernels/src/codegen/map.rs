//! Elementwise ("map") kernels: `outputs[i] = f(inputs[i], scalars)` over `n` elements, with a
//! grid-stride loop over 16-byte vectors and a scalar loop for the last `n mod step` elements.
//! Buffers passed whole are allocation-aligned, so the vector path always applies.

use super::tensor::{tensor_param, Access, Tensor};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::scalar::{F32, U32};
use kernel_runtime::LaunchConfig;

/// Threads per CTA of map kernels.
pub(crate) const MAP_THREADS: u32 = 256;
/// The grid never exceeds this many CTAs; the loop strides over the rest.
const MAX_MAP_CTAS: u32 = 1 << 20;

/// The signature of an elementwise kernel. Parameters are declared in the order inputs,
/// outputs, f32 scalars, then `n: u32`.
pub(crate) struct MapSig<'a> {
    pub name: String,
    pub inputs: &'a [(&'a str, FloatType)],
    pub outputs: &'a [(&'a str, FloatType)],
    pub scalars: &'a [&'a str],
}

/// Elements one loop step moves: one 16-byte vector of the narrowest format.
pub(crate) fn step_elems(formats: impl IntoIterator<Item = FloatType>) -> u32 {
    formats
        .into_iter()
        .map(FloatType::per_vector)
        .max()
        .unwrap_or(4)
}

/// Builds the kernel; `f` maps one element's inputs (f32) and the scalars to its outputs.
pub(crate) fn map_kernel(
    sig: &MapSig,
    f: impl Fn(&mut KernelBuilder, &[Value<F32>], &[Value<F32>]) -> Vec<Value<F32>>,
) -> Kernel {
    let mut b = KernelBuilder::new(sig.name.clone());
    let ins: Vec<Tensor> = sig
        .inputs
        .iter()
        .map(|&(name, fmt)| tensor_param(&mut b, name, fmt, false))
        .collect();
    let outs: Vec<Tensor> = sig
        .outputs
        .iter()
        .map(|&(name, fmt)| tensor_param(&mut b, name, fmt, true))
        .collect();
    let scalars: Vec<Value<F32>> = sig.scalars.iter().map(|s| b.param::<F32>(s)).collect();
    let n = b.param::<U32>("n");
    let step = step_elems(ins.iter().chain(&outs).map(Tensor::format));
    let shift = step.trailing_zeros();

    let steps = b.shr(n, shift);
    let gid = b.global_index(Dim::X);
    let stride = b.grid_stride(Dim::X);
    b.for_range(gid, steps, stride, |b, s| {
        let base = b.shl(s, shift);
        let loaded: Vec<Vec<Value<F32>>> = ins.iter().map(|t| load_run(b, t, base, step)).collect();
        let mut results: Vec<Vec<Value<F32>>> = vec![Vec::new(); outs.len()];
        for e in 0..step as usize {
            let args: Vec<Value<F32>> = loaded.iter().map(|v| v[e]).collect();
            for (slot, r) in results.iter_mut().zip(f(b, &args, &scalars)) {
                slot.push(r);
            }
        }
        for (t, vals) in outs.iter().zip(&results) {
            store_run(b, t, base, vals);
        }
    });
    let tail = b.shl(steps, shift);
    let start = b.add(tail, gid);
    b.for_range(start, n, stride, |b, i| {
        let args: Vec<Value<F32>> = ins.iter().map(|t| t.load(b, i)).collect();
        for (t, r) in outs.iter().zip(f(b, &args, &scalars)) {
            t.store(b, i, r);
        }
    });
    b.finish()
}

/// Loads `count` elements from `base` as 16-byte vectors.
pub(crate) fn load_run(
    b: &mut KernelBuilder,
    t: &Tensor,
    base: Value<U32>,
    count: u32,
) -> Vec<Value<F32>> {
    let per = t.format().per_vector();
    (0..count / per)
        .flat_map(|j| {
            let idx = offset(b, base, j * per);
            t.load_n(b, idx, Access::Vector)
        })
        .collect()
}

/// Stores `vals` from `base` as 16-byte vectors.
pub(crate) fn store_run(b: &mut KernelBuilder, t: &Tensor, base: Value<U32>, vals: &[Value<F32>]) {
    let per = t.format().per_vector() as usize;
    for (j, chunk) in vals.chunks(per).enumerate() {
        let idx = offset(b, base, (j * per) as u32);
        t.store_n(b, idx, Access::Vector, chunk);
    }
}

fn offset(b: &mut KernelBuilder, base: Value<U32>, by: u32) -> Value<U32> {
    if by == 0 {
        base
    } else {
        let k = b.const_u32(by);
        b.add(base, k)
    }
}

/// Launch shape of a map kernel over `n` elements moved `step` at a time.
pub(crate) fn map_launch(n: u32, step: u32) -> LaunchConfig {
    let work = (n / step).max(1);
    LaunchConfig::linear(work.div_ceil(MAP_THREADS).min(MAX_MAP_CTAS), MAP_THREADS)
}
