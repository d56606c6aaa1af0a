//! Softmax forward for rows wider than a CTA holds in registers (more than
//! `MAX_ROW_THREADS × held` chunks): the same function as `forward_kernel`, with the rest of
//! each row streamed.
//!
//! Each thread holds its first chunks in registers, folds every chunk into a running (max, sum)
//! pair as it reads them (overflow chunks several at a time, all loads issued first), then the
//! group agrees on the row maximum `M`, rescales its partial sums to it, sums them, and writes:
//! held chunks from registers, overflow chunks read again, last to first, so the first it meets
//! are the ones most likely still in L2.

use super::forward_params::ForwardParams;
use crate::codegen::math::ex2;
use crate::codegen::rows::{for_each_row, held, GroupSum, Row};
use crate::rowwise::index::{chunks, element};
use crate::rowwise::online::{combine, fold};
use crate::rowwise::reduce::GroupMax;
use crate::rowwise::spec::{row_held_chunks, RowSpec};
use crate::rowwise::unroll::{for_chunk_groups, for_chunk_groups_rev};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::Kernel;

/// Parameters: [`ForwardParams`].
pub(crate) fn softmax_forward_streaming(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("softmax_streaming_{}", spec.suffix()));
    let p = ForwardParams::declare(&mut b, spec);
    let scores = p.scores(spec);

    let width = spec.access.width(storage);
    let count = row_held_chunks(storage, spec.access);
    let nchunks = chunks(&mut b, p.cols, width);
    let maxer = GroupMax::new(&mut b, spec.group);
    let summer = GroupSum::new(&mut b, spec.group, 1);

    for_each_row(&mut b, spec.group, p.rows, |b, row: Row| {
        let base = b.mul(row.row, p.cols);
        let limit = scores.limit(b, row.row, p.queries, p.offset);
        let slots = held(b, &row, nchunks, count);
        let kept = scores.read(b, base, &slots, limit);
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let zero = b.const_f32(0.0);
        let m = b.var(ninf);
        let s = b.var(zero);
        fold(b, m, s, &kept.concat());
        for_chunk_groups(b, &row, count, nchunks, width, |b, slots| {
            let t = scores.read(b, base, slots, limit);
            fold(b, m, s, &t.concat());
        });

        let (top, total) = combine(b, &maxer, &summer, m, s);
        let one = b.const_f32(1.0);
        let inv = b.div(one, total);
        let write = |b: &mut KernelBuilder, c: Value<U32>, vals: &[Value<F32>]| {
            let out: Vec<Value<F32>> = vals
                .iter()
                .map(|&t| {
                    let e = b.sub(t, top);
                    let e = ex2(b, e);
                    b.mul(e, inv)
                })
                .collect();
            let idx = element(b, base, c, width);
            p.y.store_n(b, idx, spec.access, &out);
        };
        for (&(c, active), vals) in slots.iter().zip(&kept) {
            b.if_(active, |b| write(b, c, vals));
        }
        for_chunk_groups_rev(b, &row, count, nchunks, width, |b, slots| {
            let pending: Vec<_> = slots
                .iter()
                .map(|&(c, _)| scores.load(b, base, c, limit))
                .collect();
            for (&(c, active), chunk) in slots.iter().zip(&pending) {
                let t = scores.scale(b, chunk, limit);
                b.if_(active, |b| write(b, c, &t));
            }
        });
    });
    b.finish()
}
