//! The two single-CTA kernels around the fused pass: counting the rows that are not ignored
//! (before; the gradient divides by it) and averaging the per-row losses (after). Both sum in a
//! fixed order over a fixed block shape, so the result is the same on every run.

use crate::codegen::reduce::BlockSum;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::{F32, S32, U32};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;

/// Threads of the single CTA of both kernels.
pub(crate) const TALLY_THREADS: u32 = 256;

/// Parameters: `targets, loss, rows, ignore_index`; writes `loss[1]` = rows whose target is not
/// `ignore_index` (as f32: exact below 2²⁴ rows).
pub(crate) fn count_targets() -> Kernel {
    let mut b = KernelBuilder::new("builder_cross_entropy_count");
    b.reqntid([TALLY_THREADS, 1, 1]);
    let targets = b.param_slice::<S32>("targets");
    let loss = b.param_slice_mut::<F32>("loss");
    let rows = b.param::<U32>("rows");
    let ignore = b.param::<S32>("ignore_index");
    let summer = BlockSum::new(&mut b, "counts", 1);
    let tid = b.tid(Dim::X);
    let step = b.ntid(Dim::X);
    let zero = b.const_f32(0.0);
    let one = b.const_f32(1.0);
    let n = b.var(zero);
    b.for_range(tid, rows, step, |b, r| {
        let t = b.ld_global(&targets, r);
        let kept = b.setp(Cmp::Ne, t, ignore);
        let add = b.selp(kept, one, zero);
        let s = b.add(n, add);
        b.assign(n, s);
    });
    let total = summer.sum(&mut b, &[n])[0];
    let zero_u = b.const_u32(0);
    let first = b.setp(Cmp::Eq, tid, zero_u);
    b.if_(first, |b| {
        let one_u = b.const_u32(1);
        b.st_global(&loss, one_u, total);
    });
    b.finish()
}

/// Parameters: `row_loss, loss, rows`; writes `loss[0] = Σ row_loss / loss[1]`.
pub(crate) fn mean_loss() -> Kernel {
    let mut b = KernelBuilder::new("builder_cross_entropy_mean");
    b.reqntid([TALLY_THREADS, 1, 1]);
    let row_loss = b.param_slice::<F32>("row_loss");
    let loss = b.param_slice_mut::<F32>("loss");
    let rows = b.param::<U32>("rows");
    let summer = BlockSum::new(&mut b, "sums", 1);
    let tid = b.tid(Dim::X);
    let step = b.ntid(Dim::X);
    let zero = b.const_f32(0.0);
    let acc = b.var(zero);
    b.for_range(tid, rows, step, |b, r| {
        let v = b.ld_global(&row_loss, r);
        let s = b.add(acc, v);
        b.assign(acc, s);
    });
    let total = summer.sum(&mut b, &[acc])[0];
    let zero_u = b.const_u32(0);
    let first = b.setp(Cmp::Eq, tid, zero_u);
    b.if_(first, |b| {
        let one_u = b.const_u32(1);
        let count = b.ld_global(&loss, one_u);
        let mean = b.div(total, count);
        b.st_global(&loss, zero_u, mean);
    });
    b.finish()
}
