//! LayerNorm forward: `y = (x − mean)·rstd·γ + β`, `rstd = 1/√(var + eps)`, with the biased
//! variance from a second pass over the centred values (held in registers where they fit).

use super::row_io::{chunk_start, chunks, element};
use super::spec::RowSpec;
use crate::codegen::math;
use crate::codegen::rows::{for_each_row, for_overflow, held, held_chunks, GroupSum};
use crate::codegen::tensor::tensor_param;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::Kernel;
use kernel_dsl::scalar::{F32, U32};

/// Parameters: `x, gamma, beta, y, rows, cols, eps`.
pub(crate) fn layer_norm(spec: RowSpec) -> Kernel {
    let RowSpec {
        storage,
        access,
        group,
    } = spec;
    let mut b = KernelBuilder::new(format!("layer_norm_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let gamma = tensor_param(&mut b, "gamma", storage, false);
    let beta = tensor_param(&mut b, "beta", storage, false);
    let y = tensor_param(&mut b, "y", storage, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let eps = b.param::<F32>("eps");

    let width = access.width(storage);
    let count = held_chunks(storage, access);
    let nchunks = chunks(&mut b, cols, width);
    let cols_f = b.cvt::<F32, U32>(cols);
    let reducer = GroupSum::new(&mut b, group, 1);

    for_each_row(&mut b, group, rows, |b, row| {
        let base = b.mul(row.row, cols);
        let zero = b.const_f32(0.0);
        let sum = b.var(zero);
        let add_all = |b: &mut KernelBuilder, acc: Value<F32>, vals: &[Value<F32>]| {
            for &v in vals {
                let s = b.add(acc, v);
                b.assign(acc, s);
            }
        };
        let slots = held(b, &row, nchunks, count);
        let mut kept = Vec::new();
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let xs = x.load_n_or_zero(b, idx, access, active);
            add_all(b, sum, &xs);
            kept.push((c, active, idx, xs));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let xs = x.load_n(b, idx, access);
            add_all(b, sum, &xs);
        });
        let total = reducer.sum(b, &[sum])[0];
        let mean = b.div(total, cols_f);

        let sq = b.var(zero);
        let add_sq = |b: &mut KernelBuilder, vals: &[Value<F32>]| {
            for &v in vals {
                let d = b.sub(v, mean);
                let s = b.fma(d, d, sq);
                b.assign(sq, s);
            }
        };
        for (_, active, _, xs) in &kept {
            b.if_(*active, |b| add_sq(b, xs));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let xs = x.load_n(b, idx, access);
            add_sq(b, &xs);
        });
        let var_sum = reducer.sum(b, &[sq])[0];
        let var = b.div(var_sum, cols_f);
        let shifted = b.add(var, eps);
        let rstd = math::rsqrt_rn(b, shifted);

        let write = |b: &mut KernelBuilder, c, idx, xs: &[Value<F32>]| {
            let gi = chunk_start(b, c, width);
            let gs = gamma.load_n(b, gi, access);
            let bs = beta.load_n(b, gi, access);
            let out: Vec<Value<F32>> = xs
                .iter()
                .zip(gs.iter().zip(&bs))
                .map(|(&v, (&g, &be))| {
                    let d = b.sub(v, mean);
                    let n = b.mul(d, rstd);
                    b.fma(n, g, be)
                })
                .collect();
            y.store_n(b, idx, access, &out);
        };
        for (c, active, idx, xs) in &kept {
            b.if_(*active, |b| write(b, *c, *idx, xs));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let xs = x.load_n(b, idx, access);
            write(b, c, idx, &xs);
        });
    });
    b.finish()
}
