//! Deterministic column sums for the γ/β gradients: each CTA of a backward kernel owns one
//! row of a `parts × cols` f32 workspace (no atomics); [`column_sum`] then adds the rows of
//! each column in index order.

use crate::codegen::map::load_run;
use crate::codegen::map::store_run;
use crate::codegen::tensor::{tensor_param, Access, Tensor};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};

/// Most CTAs a backward launch uses, so the workspace is at most this many rows: about two
/// waves of two 512-thread CTAs per SM on a 132-SM GPU, each CTA looping over many rows, while
/// the column sums read half what 1024 partial rows would cost.
pub(crate) const MAX_PARTS: u32 = 512;

/// Loads `width` f32 partials at `idx` (vectors where `access` is vectorized).
pub(crate) fn load_partials(
    b: &mut KernelBuilder,
    t: &Tensor,
    idx: Value<U32>,
    access: Access,
    width: u32,
) -> Vec<Value<F32>> {
    match access {
        Access::Vector => load_run(b, t, idx, width),
        Access::Scalar => vec![t.load(b, idx)],
    }
}

/// Stores `vals` as f32 partials at `idx`.
pub(crate) fn store_partials(
    b: &mut KernelBuilder,
    t: &Tensor,
    idx: Value<U32>,
    access: Access,
    vals: &[Value<F32>],
) {
    match access {
        Access::Vector => store_run(b, t, idx, vals),
        Access::Scalar => t.store(b, idx, vals[0]),
    }
}

/// Threads of a column-sum CTA: [`SUM_COLS`] columns × [`SUM_LANES`] interleaved shares of
/// the parts.
pub(crate) const SUM_THREADS: u32 = SUM_COLS * SUM_LANES;
/// Columns per column-sum CTA (one warp's width, so each load is one 128-byte line).
pub(crate) const SUM_COLS: u32 = 32;
/// Shares of the parts per column: a whole warp's worth, so a column sum CTA has 1024 threads
/// (each column-sum CTA is alone on its SM; `cols / 32` of them barely fill the GPU).
const SUM_LANES: u32 = 32;
/// Independent accumulators per thread, so several loads are in flight.
const SUM_ACCS: u32 = 8;

/// `out[c] = Σ_{p < parts} partial[p·cols + c]`. Parameters: `partial, out, parts, cols`.
///
/// Thread `(lane, col)` of a CTA adds parts `lane, lane + 32, …` of its column into eight
/// accumulators (part `p` goes to accumulator `(p / 32) mod 8`), adds those in order, and the
/// 32 lanes' sums are added in lane order through shared memory. The order depends only on
/// `parts`, so the result is the same on every run and every device.
pub(crate) fn column_sum(storage: FloatType) -> Kernel {
    let mut b = KernelBuilder::new(format!("norm_column_sum_{}", storage.suffix()));
    b.reqntid([SUM_THREADS, 1, 1]);
    let partial = tensor_param(&mut b, "partial", FloatType::F32, false);
    let out = tensor_param(&mut b, "out", storage, true);
    let parts = b.param::<U32>("parts");
    let cols = b.param::<U32>("cols");
    let lane_sums = b.shared_array::<F32>("lane_sums", SUM_THREADS);

    let tid = b.tid(Dim::X);
    let c31 = b.const_u32(SUM_COLS - 1);
    let tx = b.and(tid, c31);
    let ty = b.shr(tid, SUM_COLS.trailing_zeros());
    let ctaid = b.ctaid(Dim::X);
    let width = b.const_u32(SUM_COLS);
    let col = b.mad(ctaid, width, tx);
    let inside = b.setp(Cmp::Lt, col, cols);
    let zero = b.const_f32(0.0);
    let total = b.var(zero);
    b.if_(inside, |b| {
        let accs: Vec<Value<F32>> = (0..SUM_ACCS).map(|_| b.var(zero)).collect();
        let lanes = b.const_u32(SUM_LANES);
        let group = b.const_u32(SUM_LANES * SUM_ACCS);
        // Whole groups of SUM_ACCS·SUM_LANES parts: eight independent loads per trip.
        let shift = (SUM_LANES * SUM_ACCS).trailing_zeros();
        let whole = b.shr(parts, shift);
        let whole = b.shl(whole, shift);
        b.for_range(ty, whole, group, |b, p| {
            for (k, &acc) in accs.iter().enumerate() {
                let off = b.const_u32(k as u32 * SUM_LANES);
                let pk = b.add(p, off);
                let idx = b.mad(pk, cols, col);
                let v = partial.load(b, idx);
                let s = b.add(acc, v);
                b.assign(acc, s);
            }
        });
        let start = b.add(whole, ty);
        b.for_range(start, parts, lanes, |b, p| {
            let idx = b.mad(p, cols, col);
            let v = partial.load(b, idx);
            let s = b.add(accs[0], v);
            b.assign(accs[0], s);
        });
        let mut sum = accs[0];
        for &acc in &accs[1..] {
            sum = b.add(sum, acc);
        }
        b.assign(total, sum);
    });
    b.st_shared(&lane_sums, tid, total);
    b.bar_sync();
    let zero_u = b.const_u32(0);
    let first_lane = b.setp(Cmp::Eq, ty, zero_u);
    b.if_(first_lane, |b| {
        b.if_(inside, |b| {
            let mut sum = b.ld_shared(&lane_sums, tx);
            for lane in 1..SUM_LANES {
                let off = b.const_u32(lane * SUM_COLS);
                let slot = b.add(off, tx);
                let v = b.ld_shared(&lane_sums, slot);
                sum = b.add(sum, v);
            }
            out.store(b, col, sum);
        });
    });
    b.finish()
}
