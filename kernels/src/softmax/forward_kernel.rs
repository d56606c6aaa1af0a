//! Softmax forward: `y = softmax(scale · x)` over each row, entries outside the mask counted
//! as −∞ (so they come out 0).
//!
//! Work is in base 2: `t = x · scale · log₂e`, `y = 2^(t − M) / Σ 2^(t − M)`. Each thread keeps
//! its held chunks in registers, folds any overflow chunks into a running (max, sum) pair as it
//! reads them, then the group agrees on the row maximum `M`, rescales its partial sums to it,
//! sums them, and writes from registers (overflow chunks are read again).

use crate::codegen::rows::{for_each_row, held, GroupSum, Row};
use crate::codegen::tensor::{tensor_param, Tensor};
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::online::{combine, fold};
use crate::rowwise::reduce::GroupMax;
use crate::rowwise::spec::{row_held_chunks, RowSpec};
use crate::rowwise::unroll::{for_chunk_groups, for_chunk_groups_rev, load_slots};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::Kernel;
use kernel_dsl::op::{ApproxFn, Cmp};

/// The scaled, masked values of one chunk: `t = x · scale_log2`, or −∞ past the row's limit.
struct Chunk<'a> {
    x: &'a Tensor,
    spec: RowSpec,
    scale_log2: Value<F32>,
}

impl Chunk<'_> {
    /// Chunks wholly past the limit are not read at all: a causal mask skips about half of
    /// the scores.
    fn load(
        &self,
        b: &mut KernelBuilder,
        idx: Value<U32>,
        col0: Value<U32>,
        limit: Value<U32>,
    ) -> Vec<Value<F32>> {
        let width = self.spec.access.width(self.spec.storage);
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let vals: Vec<Value<F32>> = (0..width).map(|_| b.var(ninf)).collect();
        let seen = b.setp(Cmp::Le, col0, limit);
        b.if_(seen, |b| {
            let xs = self.x.load_n(b, idx, self.spec.access);
            for (k, (&var, &v)) in vals.iter().zip(&xs).enumerate() {
                let t = b.mul(v, self.scale_log2);
                let col = if k == 0 {
                    col0
                } else {
                    let k = b.const_u32(k as u32);
                    b.add(col0, k)
                };
                let inside = b.setp(Cmp::Le, col, limit);
                let t = b.selp(inside, t, ninf);
                b.assign(var, t);
            }
        });
        vals
    }
}

/// Parameters: `x, y, rows, cols, scale_log2, queries, offset`. Column `j` of row `r` takes
/// part when `j ≤ r mod queries + offset` (no mask: `queries = 1`, `offset = cols − 1`).
pub(crate) fn softmax_forward(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("softmax_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let y = tensor_param(&mut b, "y", storage, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let scale_log2 = b.param::<F32>("scale_log2");
    let queries = b.param::<U32>("queries");
    let offset = b.param::<U32>("offset");
    let chunk = Chunk {
        x: &x,
        spec,
        scale_log2,
    };

    let width = spec.access.width(storage);
    let count = row_held_chunks(storage, spec.access);
    let nchunks = chunks(&mut b, cols, width);
    let maxer = GroupMax::new(&mut b, spec.group);
    let summer = GroupSum::new(&mut b, spec.group, 1);

    for_each_row(&mut b, spec.group, rows, |b, row: Row| {
        let base = b.mul(row.row, cols);
        let q = b.rem(row.row, queries);
        let limit = b.add(q, offset);
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let zero = b.const_f32(0.0);

        let slots = held(b, &row, nchunks, count);
        let mut kept = Vec::new();
        let mut held_vals = Vec::new();
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let vars: Vec<Value<F32>> = (0..width).map(|_| b.var(ninf)).collect();
            b.if_(active, |b| {
                let col0 = chunk_start(b, c, width);
                for (&var, v) in vars.iter().zip(chunk.load(b, idx, col0, limit)) {
                    b.assign(var, v);
                }
            });
            held_vals.extend(vars.iter().copied());
            kept.push((active, idx, vars));
        }
        let m = b.var(ninf);
        let s = b.var(zero);
        fold(b, m, s, &held_vals);
        for_chunk_groups(b, &row, count, nchunks, width, |b, slots| {
            let loaded = load_slots(b, slots, width, f32::NEG_INFINITY, |b, c| {
                let idx = element(b, base, c, width);
                let col0 = chunk_start(b, c, width);
                chunk.load(b, idx, col0, limit)
            });
            fold(b, m, s, &loaded.concat());
        });

        let (top, total) = combine(b, &maxer, &summer, m, s);
        let one = b.const_f32(1.0);
        let inv = b.div(one, total);

        let write = |b: &mut KernelBuilder, idx, vals: &[Value<F32>]| {
            let out: Vec<Value<F32>> = vals
                .iter()
                .map(|&t| {
                    let e = b.sub(t, top);
                    let e = b.approx(ApproxFn::Ex2, e);
                    b.mul(e, inv)
                })
                .collect();
            y.store_n(b, idx, spec.access, &out);
        };
        for (active, idx, vars) in &kept {
            b.if_(*active, |b| write(b, *idx, vars));
        }
        for_chunk_groups_rev(b, &row, count, nchunks, width, |b, slots| {
            let loaded = load_slots(b, slots, width, 0.0, |b, c| {
                let idx = element(b, base, c, width);
                let col0 = chunk_start(b, c, width);
                chunk.load(b, idx, col0, limit)
            });
            for (&(c, active), vals) in slots.iter().zip(loaded) {
                b.if_(active, |b| {
                    let idx = element(b, base, c, width);
                    write(b, idx, &vals);
                });
            }
        });
    });
    b.finish()
}
