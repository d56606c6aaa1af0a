//! Softmax forward for rows a group holds in registers: `y = softmax(scale · x)` over each row,
//! entries outside the mask counted as −∞ (so they come out 0).
//!
//! Work is in base 2: `t = x · scale · log₂e`, `y = 2^(t − M) / Σ 2^(t − M)`. Each thread issues
//! the loads of all its chunks, takes their maximum, and the group agrees on the row maximum
//! `M`; each thread then replaces its scores by `2^(t − M)` (one `ex2` per element), the group
//! sums them, and each thread writes its share scaled by the reciprocal. The row is read once
//! and written once, and nothing but the held scores lives across the reductions, which keeps
//! registers, and so the rows resident per SM, in line with the row's size.
//!
//! The launch must give each thread its whole share (`nchunks ≤ width · held`); wider rows go
//! to the streaming kernel.

use super::forward_params::ForwardParams;
use crate::codegen::math::ex2;
use crate::codegen::rows::{for_each_row, held, GroupSum, Row};
use crate::codegen::tensor::Tensor;
use crate::rowwise::index::{chunks, element, finite_or_zero};
use crate::rowwise::reduce::GroupMax;
use crate::rowwise::spec::{row_held_chunks, RowSpec};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::Kernel;

/// Parameters: [`ForwardParams`].
pub(crate) fn softmax_forward(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("softmax_{}", spec.suffix()));
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
        let t = scores.read(b, base, &slots, limit);

        let mut m = b.const_f32(f32::NEG_INFINITY);
        for &v in t.iter().flatten() {
            m = b.max(m, v);
        }
        let row_max = maxer.max(b, m);
        let top = finite_or_zero(b, row_max);

        let mut s = b.const_f32(0.0);
        let mut e = Vec::with_capacity(t.len());
        for chunk in &t {
            let mut out = Vec::with_capacity(chunk.len());
            for &v in chunk {
                let d = b.sub(v, top);
                let ev = ex2(b, d);
                s = b.add(s, ev);
                out.push(ev);
            }
            e.push(out);
        }
        let total = summer.sum(b, &[s])[0];
        let one = b.const_f32(1.0);
        let inv = b.div(one, total);

        for (&(c, active), vals) in slots.iter().zip(&e) {
            b.if_(active, |b| {
                let idx = element(b, base, c, width);
                write(b, &p.y, spec, idx, vals, inv)
            });
        }
    });
    b.finish()
}

/// Stores `vals · inv` at `idx`.
fn write(
    b: &mut KernelBuilder,
    y: &Tensor,
    spec: RowSpec,
    idx: Value<U32>,
    vals: &[Value<F32>],
    inv: Value<F32>,
) {
    let out: Vec<Value<F32>> = vals.iter().map(|&v| b.mul(v, inv)).collect();
    y.store_n(b, idx, spec.access, &out);
}
