//! The three kernels of gradient clipping: per-CTA partial sums of squares, one CTA that turns
//! them into the norm and the scale, and the in-place scaling (skipped when the scale is 1).

use crate::codegen::map::{load_run, store_run, MAP_THREADS};
use crate::codegen::math;
use crate::codegen::reduce::BlockSum;
use crate::codegen::tensor::tensor_param;
use crate::FloatType;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};

/// Most CTAs of the partial-sum kernel, so the workspace needs this many f32s.
pub const MAX_PARTS: u32 = 1024;
/// Threads of the finishing kernel (one CTA).
pub(crate) const FINISH_THREADS: u32 = 1024;
/// Vectors each thread of the partial-sum kernel loads per loop trip.
const UNROLL: u32 = 4;
/// Added to the norm before dividing, as PyTorch's `clip_grad_norm_` does.
pub(crate) const NORM_EPS: f32 = 1e-6;

/// Parameters: `grads, partial, n`. CTA `c` writes `partial[c]`, the sum of squares of its
/// grid-stride share.
pub(crate) fn sum_squares(storage: FloatType) -> Kernel {
    let mut b = KernelBuilder::new(format!("clip_sum_squares_{}", storage.suffix()));
    let grads = tensor_param(&mut b, "grads", storage, false);
    let partial = tensor_param(&mut b, "partial", FloatType::F32, true);
    let n = b.param::<U32>("n");
    let reducer = BlockSum::new(&mut b, "warp_sums", 1);
    let step = storage.per_vector();
    let shift = step.trailing_zeros();
    let zero = b.const_f32(0.0);
    let acc = b.var(zero);
    let nvec = b.shr(n, shift);
    let gid = b.global_index(Dim::X);
    let stride = b.grid_stride(Dim::X);
    // The grid is capped at MAX_PARTS CTAs, so each thread loops; UNROLL independent loads per
    // trip keep enough bytes in flight.
    let unroll = b.const_u32(UNROLL);
    let trip = b.mul(stride, unroll);
    b.for_range(gid, nvec, trip, |b, i| {
        let mut loaded = Vec::new();
        for k in 0..UNROLL {
            let kk = b.const_u32(k);
            let j = b.mad(kk, stride, i);
            let active = b.setp(Cmp::Lt, j, nvec);
            let idx = b.shl(j, shift);
            let vals: Vec<_> = (0..step).map(|_| b.var(zero)).collect();
            b.if_(active, |b| {
                for (&var, v) in vals.iter().zip(load_run(b, &grads, idx, step)) {
                    b.assign(var, v);
                }
            });
            loaded.push(vals);
        }
        for v in loaded.into_iter().flatten() {
            let s = b.fma(v, v, acc);
            b.assign(acc, s);
        }
    });
    let done = b.shl(nvec, shift);
    let first = b.add(done, gid);
    b.for_range(first, n, stride, |b, i| {
        let v = grads.load(b, i);
        let s = b.fma(v, v, acc);
        b.assign(acc, s);
    });
    let total = reducer.sum(&mut b, &[acc])[0];
    let tid = b.tid(Dim::X);
    let zero_u = b.const_u32(0);
    let first_thread = b.setp(Cmp::Eq, tid, zero_u);
    b.if_(first_thread, |b| {
        let cta = b.ctaid(Dim::X);
        partial.store(b, cta, total);
    });
    b.finish()
}

/// Parameters: `partial, norm_scale, parts, max_norm`. One CTA: adds the partials in a fixed
/// order and writes `norm_scale = [‖g‖, min(1, max_norm / (‖g‖ + 1e-6))]` (scale 1 when
/// the norm is not finite).
pub(crate) fn finish(_: ()) -> Kernel {
    let mut b = KernelBuilder::new("clip_finish");
    b.reqntid([FINISH_THREADS, 1, 1]);
    let partial = tensor_param(&mut b, "partial", FloatType::F32, false);
    let out = tensor_param(&mut b, "norm_scale", FloatType::F32, true);
    let parts = b.param::<U32>("parts");
    let max_norm = b.param::<F32>("max_norm");
    let reducer = BlockSum::new(&mut b, "warp_sums", 1);
    let zero = b.const_f32(0.0);
    let acc = b.var(zero);
    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    b.for_range(tid, parts, ntid, |b, i| {
        let v = partial.load(b, i);
        let s = b.add(acc, v);
        b.assign(acc, s);
    });
    let total = reducer.sum(&mut b, &[acc])[0];
    let norm = math::sqrt(&mut b, total);
    let eps = b.const_f32(NORM_EPS);
    let shifted = b.add(norm, eps);
    let ratio = b.div(max_norm, shifted);
    let one = b.const_f32(1.0);
    let clipped = b.min(ratio, one);
    // A non-finite norm (an overflow or a NaN gradient) scales by 1: the gradients stay as
    // they are and the caller sees the norm.
    let inf = b.const_f32(f32::INFINITY);
    let finite = b.setp(Cmp::Lt, norm, inf);
    let scale = b.selp(finite, clipped, one);
    let zero_u = b.const_u32(0);
    let first_thread = b.setp(Cmp::Eq, tid, zero_u);
    b.if_(first_thread, |b| {
        let i0 = b.const_u32(0);
        out.store(b, i0, norm);
        let i1 = b.const_u32(1);
        out.store(b, i1, scale);
    });
    b.finish()
}

/// Parameters: `grads, norm_scale, n`. Multiplies every gradient by `norm_scale[1]` unless it
/// is 1 (or NaN), in which case nothing is written.
pub(crate) fn apply(storage: FloatType) -> Kernel {
    let mut b = KernelBuilder::new(format!("clip_apply_{}", storage.suffix()));
    let grads = tensor_param(&mut b, "grads", storage, true);
    let norm_scale = tensor_param(&mut b, "norm_scale", FloatType::F32, false);
    let n = b.param::<U32>("n");
    let i1 = b.const_u32(1);
    let scale = norm_scale.load(&mut b, i1);
    let one = b.const_f32(1.0);
    let clipping = b.setp(Cmp::Lt, scale, one);
    b.if_(clipping, |b| {
        let step = storage.per_vector();
        let shift = step.trailing_zeros();
        let nvec = b.shr(n, shift);
        let gid = b.global_index(Dim::X);
        let stride = b.grid_stride(Dim::X);
        b.for_range(gid, nvec, stride, |b, i| {
            let idx = b.shl(i, shift);
            let vals = load_run(b, &grads, idx, step);
            let scaled: Vec<_> = vals.iter().map(|&v| b.mul(v, scale)).collect();
            store_run(b, &grads, idx, &scaled);
        });
        let done = b.shl(nvec, shift);
        let first = b.add(done, gid);
        b.for_range(first, n, stride, |b, i| {
            let v = grads.load(b, i);
            let s = b.mul(v, scale);
            grads.store(b, i, s);
        });
    });
    b.finish()
}

/// CTAs of the partial-sum kernel for `n` elements moved `step` at a time: enough to fill
/// the device, at most [`MAX_PARTS`]; a function of `n` only, so results do not depend on
/// the device.
pub(crate) fn parts_for(n: u32, step: u32) -> u32 {
    (n / step).div_ceil(MAP_THREADS).clamp(1, MAX_PARTS)
}
