use crate::builder::KernelBuilder;
use crate::ir::{Dim, Kernel};
use crate::op::{Cmp, ShflMode};
use crate::scalar::{F32, U32};

/// Threads per block of [`block_reduce_sum`].
pub const BLOCK_REDUCE_THREADS: u32 = 256;

/// Each block sums a grid-stride share of `x` and writes its partial sum to `out[block]`:
/// per-thread accumulation, a butterfly shuffle within each warp, one shared slot per warp, and
/// a final shuffle in warp 0. No atomics, so the result is the same on every run.
pub fn block_reduce_sum() -> Kernel {
    let warps = BLOCK_REDUCE_THREADS / 32;
    let mut b = KernelBuilder::new("block_reduce_sum");
    b.reqntid([BLOCK_REDUCE_THREADS, 1, 1]);
    let x = b.param_slice::<F32>("x");
    let out = b.param_slice_mut::<F32>("out");
    let n = b.param::<U32>("n");
    let partial = b.shared_array::<F32>("warp_sums", warps);

    let zero = b.const_f32(0.0);
    let acc = b.var(zero);
    let start = b.global_index(Dim::X);
    let stride = b.grid_stride(Dim::X);
    b.for_range(start, n, stride, |b, i| {
        let v = b.ld_global(&x, i);
        let s = b.add(acc, v);
        b.assign(acc, s);
    });
    warp_sum(&mut b, acc);

    let tid = b.tid(Dim::X);
    let lane = b.lane_id();
    let warp = b.shr(tid, 5);
    let lane0 = b.const_u32(0);
    let is_lane0 = b.setp(Cmp::Eq, lane, lane0);
    b.if_(is_lane0, |b| b.st_shared(&partial, warp, acc));
    b.bar_sync();

    let nwarps = b.const_u32(warps);
    let has_slot = b.setp(Cmp::Lt, tid, nwarps);
    let total = b.var(zero);
    b.if_(has_slot, |b| {
        let v = b.ld_shared(&partial, tid);
        b.assign(total, v);
    });
    warp_sum(&mut b, total);
    let t0 = b.setp(Cmp::Eq, tid, lane0);
    b.if_(t0, |b| {
        let block = b.ctaid(Dim::X);
        b.st_global(&out, block, total);
    });
    b.finish()
}

/// Butterfly reduction: afterwards every lane of the warp holds the warp's sum in `v`.
fn warp_sum(b: &mut KernelBuilder, v: crate::builder::Value<F32>) {
    for delta in [16, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, v, delta);
        let s = b.add(v, other);
        b.assign(v, s);
    }
}
