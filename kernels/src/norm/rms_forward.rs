//! RMSNorm fused with a residual add, written with the builder until its `#[kernel]` form
//! (`rms_kernel::add_rms_norm`) matches it on every benchmarked shape: `s = x + residual`
//! (rounded to storage, and written out), then `y = s · rstd · γ`, `rstd = 1/√(mean(s²) + eps)`.

use super::row_io::{chunk_start, chunks, element};
use super::spec::RowSpec;
use crate::codegen::math;
use crate::codegen::rows::{for_each_row, for_overflow, held, held_chunks, GroupSum, Row};
use crate::codegen::tensor::{tensor_param, Access, Tensor};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::Kernel;
use kernel_dsl::scalar::{F32, U32};

/// Parameters: `x, residual, gamma, sum, y, rows, cols, eps`.
pub(crate) fn add_rms_norm(spec: RowSpec) -> Kernel {
    build(spec, true)
}

/// The input of the norm: `x`, or `x + residual` stored to `sum`.
struct Input {
    x: Tensor,
    fused: Option<(Tensor, Tensor)>,
    access: Access,
}

impl Input {
    /// Loads (and for the fused form, forms and stores) the chunk at `idx`.
    fn first_pass(&self, b: &mut KernelBuilder, idx: Value<U32>) -> Vec<Value<F32>> {
        let xs = self.x.load_n(b, idx, self.access);
        let Some((res, sum)) = self.fused else {
            return xs;
        };
        let rs = res.load_n(b, idx, self.access);
        let s: Vec<Value<F32>> = xs
            .iter()
            .zip(&rs)
            .map(|(&a, &r)| {
                let t = b.add(a, r);
                sum.round(b, t)
            })
            .collect();
        sum.store_n(b, idx, self.access, &s);
        s
    }

    /// Reloads the chunk at `idx` after the first pass (from `sum` for the fused form).
    fn reload(&self, b: &mut KernelBuilder, idx: Value<U32>) -> Vec<Value<F32>> {
        match self.fused {
            Some((_, sum)) => sum.load_n(b, idx, self.access),
            None => self.x.load_n(b, idx, self.access),
        }
    }
}

fn build(spec: RowSpec, fused: bool) -> Kernel {
    let RowSpec {
        storage,
        access,
        group,
    } = spec;
    let op = if fused { "add_rms_norm" } else { "rms_norm" };
    let mut b = KernelBuilder::new(format!("{op}_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let residual = fused.then(|| tensor_param(&mut b, "residual", storage, false));
    let gamma = tensor_param(&mut b, "gamma", storage, false);
    let sum = fused.then(|| tensor_param(&mut b, "sum", storage, true));
    let y = tensor_param(&mut b, "y", storage, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let eps = b.param::<F32>("eps");
    let input = Input {
        x,
        fused: residual.zip(sum),
        access,
    };

    let width = access.width(storage);
    let count = held_chunks(storage, access);
    let nchunks = chunks(&mut b, cols, width);
    let cols_f = b.cvt::<F32, U32>(cols);
    let reducer = GroupSum::new(&mut b, group, 1);

    for_each_row(&mut b, group, rows, |b, row: Row| {
        let base = b.mul(row.row, cols);
        let zero = b.const_f32(0.0);
        let acc = b.var(zero);
        let slots = held(b, &row, nchunks, count);
        let mut kept = Vec::new();
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let vars: Vec<Value<F32>> = (0..width).map(|_| b.var(zero)).collect();
            b.if_(active, |b| {
                let vals = input.first_pass(b, idx);
                for (&var, v) in vars.iter().zip(vals) {
                    b.assign(var, v);
                }
            });
            for &v in &vars {
                let s = b.fma(v, v, acc);
                b.assign(acc, s);
            }
            kept.push((c, active, idx, vars));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            for v in input.first_pass(b, idx) {
                let s = b.fma(v, v, acc);
                b.assign(acc, s);
            }
        });

        let total = reducer.sum(b, &[acc])[0];
        let mean = b.div(total, cols_f);
        let shifted = b.add(mean, eps);
        let rstd = math::rsqrt_rn(b, shifted);

        let write = |b: &mut KernelBuilder, c, idx, vals: &[Value<F32>]| {
            let gi = chunk_start(b, c, width);
            let g = gamma.load_n(b, gi, access);
            let out: Vec<Value<F32>> = vals
                .iter()
                .zip(&g)
                .map(|(&v, &g)| {
                    let n = b.mul(v, rstd);
                    b.mul(n, g)
                })
                .collect();
            y.store_n(b, idx, access, &out);
        };
        for (c, active, idx, vars) in &kept {
            b.if_(*active, |b| write(b, *c, *idx, vars));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let vals = input.reload(b, idx);
            write(b, c, idx, &vals);
        });
    });
    b.finish()
}
