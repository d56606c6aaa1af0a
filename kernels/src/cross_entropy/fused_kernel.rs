//! The fused pass over each row of logits: loss and gradient of softmax cross-entropy.
//!
//! In base 2 (`t = x · log₂e`): the online (max, sum) of the row gives
//! `lse₂ = M + log₂ S`; the row's loss is `(lse₂ − t[target]) · ln 2`, and its gradient
//! `(2^(t − lse₂) − [j = target]) / count`, where `count` (non-ignored rows) was written to
//! `loss[1]` by the counting kernel. Ignored rows get loss 0 and gradient 0; a target outside
//! `0..cols` that is not the ignore index gets NaN for both, so the mistake shows.

use crate::codegen::math::ex2;
use crate::codegen::rows::{for_each_row, held, GroupSum, Row};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::online::{combine, fold};
use crate::rowwise::reduce::GroupMax;
use crate::rowwise::spec::{wide_row_held_chunks, RowSpec};
use crate::rowwise::unroll::{for_chunk_groups, for_chunk_groups_rev, load_slots};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, S32, U32};
use kernel_dsl::ir::Kernel;
use kernel_dsl::op::{ApproxFn, Cmp};

/// Parameters: `logits, targets, loss, dlogits, row_loss, rows, cols, ignore_index`.
pub(crate) fn cross_entropy_fused(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let access = spec.access;
    let mut b = KernelBuilder::new(format!("cross_entropy_{}", spec.suffix()));
    let logits = tensor_param(&mut b, "logits", storage, false);
    let targets = b.param_slice::<S32>("targets");
    let loss = b.param_slice::<F32>("loss");
    let dlogits = tensor_param(&mut b, "dlogits", storage, true);
    let row_loss = b.param_slice_mut::<F32>("row_loss");
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let ignore = b.param::<S32>("ignore_index");

    let width = access.width(storage);
    let count = wide_row_held_chunks(storage, access);
    let nchunks = chunks(&mut b, cols, width);
    let maxer = GroupMax::new(&mut b, spec.group);
    let summer = GroupSum::new(&mut b, spec.group, 1);
    let one_u = b.const_u32(1);
    let counted = b.ld_global(&loss, one_u);
    let one = b.const_f32(1.0);
    let inv_count = b.div(one, counted);
    let log2e = b.const_f32(std::f32::consts::LOG2_E);

    for_each_row(&mut b, spec.group, rows, |b, row: Row| {
        let base = b.mul(row.row, cols);
        let target = b.ld_global(&targets, row.row);
        let ignored = b.setp(Cmp::Eq, target, ignore);
        // As u32, a negative target is huge, so one comparison checks both ends.
        let target_u = b.cvt::<U32, S32>(target);
        let in_range = b.setp(Cmp::Lt, target_u, cols);
        let nan = b.const_f32(f32::NAN);
        let zero = b.const_f32(0.0);
        let wrong = b.selp(ignored, zero, nan);
        let factor = b.selp(in_range, inv_count, wrong);
        let factor = b.selp(ignored, zero, factor);
        let t_target = b.var(nan);
        b.if_(in_range, |b| {
            let at = b.add(base, target_u);
            let v = logits.load(b, at);
            let v = b.mul(v, log2e);
            b.assign(t_target, v);
        });

        let ninf = b.const_f32(f32::NEG_INFINITY);
        let scaled = |b: &mut KernelBuilder, idx| -> Vec<Value<F32>> {
            let xs = logits.load_n(b, idx, access);
            xs.iter().map(|&v| b.mul(v, log2e)).collect()
        };
        let slots = held(b, &row, nchunks, count);
        let mut kept = Vec::new();
        let mut held_vals = Vec::new();
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let vars: Vec<Value<F32>> = (0..width).map(|_| b.var(ninf)).collect();
            b.if_(active, |b| {
                for (&var, v) in vars.iter().zip(scaled(b, idx)) {
                    b.assign(var, v);
                }
            });
            held_vals.extend(vars.iter().copied());
            kept.push((c, active, idx, vars));
        }
        let m = b.var(ninf);
        let s = b.var(zero);
        fold(b, m, s, &held_vals);
        for_chunk_groups(b, &row, count, nchunks, width, |b, slots| {
            let loaded = load_slots(b, slots, width, f32::NEG_INFINITY, |b, c| {
                let idx = element(b, base, c, width);
                scaled(b, idx)
            });
            fold(b, m, s, &loaded.concat());
        });
        let (top, total) = combine(b, &maxer, &summer, m, s);
        let log_total = b.approx(ApproxFn::Lg2, total);
        let lse = b.add(top, log_total);

        let lane0 = b.const_u32(0);
        let first = b.setp(Cmp::Eq, row.lane, lane0);
        b.if_(first, |b| {
            let d = b.sub(lse, t_target);
            let ln2 = b.const_f32(std::f32::consts::LN_2);
            let l = b.mul(d, ln2);
            let l = b.selp(ignored, zero, l);
            b.st_global(&row_loss, row.row, l);
        });

        let write = |b: &mut KernelBuilder, c, idx, vals: &[Value<F32>]| {
            let col0 = chunk_start(b, c, width);
            let out: Vec<Value<F32>> = vals
                .iter()
                .enumerate()
                .map(|(k, &t)| {
                    let e = b.sub(t, lse);
                    let p = ex2(b, e);
                    let col = if k == 0 {
                        col0
                    } else {
                        let k = b.const_u32(k as u32);
                        b.add(col0, k)
                    };
                    let hit = b.setp(Cmp::Eq, col, target_u);
                    let minus = b.sub(p, one);
                    let g = b.selp(hit, minus, p);
                    b.mul(g, factor)
                })
                .collect();
            dlogits.store_n(b, idx, access, &out);
        };
        for (c, active, idx, vars) in &kept {
            b.if_(*active, |b| write(b, *c, *idx, vars));
        }
        for_chunk_groups_rev(b, &row, count, nchunks, width, |b, slots| {
            let loaded = load_slots(b, slots, width, 0.0, |b, c| {
                let idx = element(b, base, c, width);
                scaled(b, idx)
            });
            for (&(c, active), vals) in slots.iter().zip(loaded) {
                b.if_(active, |b| {
                    let idx = element(b, base, c, width);
                    write(b, c, idx, &vals);
                });
            }
        });
    });
    b.finish()
}
