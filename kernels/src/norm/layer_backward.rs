//! LayerNorm backward. With `x̂ = (x − mean)·rstd` and `g = γ·dy`:
//! `dx = rstd·(g − mean(g) − x̂·mean(g·x̂))`; the γ and β gradients `Σ_rows dy·x̂` and
//! `Σ_rows dy` go to two `parts × cols` workspace blocks (γ first), one row per CTA.

use super::partials::{load_partials, store_partials};
use super::row_io::{chunk_start, chunks, element};
use super::spec::RowSpec;
use crate::codegen::math;
use crate::codegen::rows::{
    for_each_row, for_overflow, held, held_chunks_of, GroupSum, Row, BACKWARD_HELD_ELEMS,
};
use crate::codegen::tensor::{tensor_param, tensor_param_of, Format};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::{Dim, Kernel};

/// Parameters: `x, gamma, dy, dx, partial, rows, cols, eps`. CTA-per-row specs only.
pub(crate) fn layer_norm_backward(spec: RowSpec) -> Kernel {
    let RowSpec {
        storage,
        access,
        group,
    } = spec;
    let mut b = KernelBuilder::new(format!("layer_norm_backward_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let gamma = tensor_param(&mut b, "gamma", storage, false);
    let dy = tensor_param(&mut b, "dy", storage, false);
    let dx = tensor_param(&mut b, "dx", storage, true);
    let partial = tensor_param_of(&mut b, "partial", Format::F32, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let eps = b.param::<F32>("eps");

    let width = access.width(storage);
    let count = held_chunks_of(storage, access, BACKWARD_HELD_ELEMS);
    let nchunks = chunks(&mut b, cols, width);
    let cols_f = b.cvt::<F32, U32>(cols);
    let reducer = GroupSum::new(&mut b, group, 2);
    let zero = b.const_f32(0.0);

    let ctaid = b.ctaid(Dim::X);
    let nctaid = b.nctaid(Dim::X);
    let gamma_base = b.mul(ctaid, cols);
    let block = b.mul(nctaid, cols);
    let beta_base = b.add(block, gamma_base);
    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    let place = Row {
        row: ctaid,
        lane: tid,
        width: ntid,
    };
    let slots = held(&mut b, &place, nchunks, count);
    let mut dgs = Vec::new();
    let mut dbs = Vec::new();
    for _ in &slots {
        dgs.push((0..width).map(|_| b.var(zero)).collect::<Vec<_>>());
        dbs.push((0..width).map(|_| b.var(zero)).collect::<Vec<_>>());
    }
    for_overflow(&mut b, &place, nchunks, count, |b, c| {
        let zeros = vec![zero; width as usize];
        for base in [gamma_base, beta_base] {
            let pi = element(b, base, c, width);
            store_partials(b, &partial, pi, access, &zeros);
        }
    });

    for_each_row(&mut b, group, rows, |b, row| {
        let base = b.mul(row.row, cols);
        let mut kept = Vec::new();
        let sum = b.var(zero);
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let xs = x.load_n_or_zero(b, idx, access, active);
            let ds = dy.load_n_or_zero(b, idx, access, active);
            for &v in &xs {
                let s = b.add(sum, v);
                b.assign(sum, s);
            }
            kept.push((idx, active, xs, ds));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            for v in x.load_n(b, idx, access) {
                let s = b.add(sum, v);
                b.assign(sum, s);
            }
        });
        let total = reducer.sum(b, &[sum])[0];
        let mean = b.div(total, cols_f);

        let sq = b.var(zero);
        let add_sq = |b: &mut KernelBuilder, xs: &[Value<F32>]| {
            for &v in xs {
                let d = b.sub(v, mean);
                let s = b.fma(d, d, sq);
                b.assign(sq, s);
            }
        };
        for (_, active, xs, _) in &kept {
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
        let rstd = math::rsqrt(b, shifted);

        // Σ g and Σ g·x̂ (inactive lanes hold dy = 0, so they add nothing).
        let sg = b.var(zero);
        let sgx = b.var(zero);
        let add_g =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let g = b.mul(gv, dv);
                    let s = b.add(sg, g);
                    b.assign(sg, s);
                    let d = b.sub(xv, mean);
                    let xh = b.mul(d, rstd);
                    let t = b.fma(g, xh, sgx);
                    b.assign(sgx, t);
                }
            };
        // γ is re-read (from L1) where needed rather than held across the reductions,
        // which keeps register use low enough for two CTAs per SM.
        for (&(c, active), (_, _, xs, ds)) in slots.iter().zip(&kept) {
            let gi = chunk_start(b, c, width);
            let gs = gamma.load_n_or_zero(b, gi, access, active);
            add_g(b, xs, ds, &gs);
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            add_g(b, &xs, &ds, &gs);
        });
        let sums = reducer.sum(b, &[sg, sgx]);
        let mean_g = b.div(sums[0], cols_f);
        let mean_gx = b.div(sums[1], cols_f);

        // dx, and the per-element (dγ, dβ) terms (dy·x̂, dy).
        let grad =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                let mut out = Vec::new();
                let mut dg = Vec::new();
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let g = b.mul(gv, dv);
                    let d = b.sub(xv, mean);
                    let xh = b.mul(d, rstd);
                    let t = b.sub(g, mean_g);
                    let u = b.mul(xh, mean_gx);
                    let v = b.sub(t, u);
                    out.push(b.mul(v, rstd));
                    dg.push(b.mul(dv, xh));
                }
                (out, dg)
            };
        for (k, (idx, active, xs, ds)) in kept.iter().enumerate() {
            let (ga, ba) = (&dgs[k], &dbs[k]);
            let c = slots[k].0;
            b.if_(*active, |b| {
                let gi = chunk_start(b, c, width);
                let gs = gamma.load_n(b, gi, access);
                let (out, dg) = grad(b, xs, ds, &gs);
                dx.store_n(b, *idx, access, &out);
                for ((&a, &d), (&bb, &dd)) in ga.iter().zip(&dg).zip(ba.iter().zip(ds)) {
                    let s = b.add(a, d);
                    b.assign(a, s);
                    let t = b.add(bb, dd);
                    b.assign(bb, t);
                }
            });
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            let (out, dg) = grad(b, &xs, &ds, &gs);
            dx.store_n(b, idx, access, &out);
            for (pbase, terms) in [(gamma_base, &dg), (beta_base, &ds)] {
                let pi = element(b, pbase, c, width);
                let old = load_partials(b, &partial, pi, access, width);
                let new: Vec<Value<F32>> = old
                    .iter()
                    .zip(terms.iter())
                    .map(|(&o, &d)| b.add(o, d))
                    .collect();
                store_partials(b, &partial, pi, access, &new);
            }
        });
    });

    for (k, &(c, active)) in slots.iter().enumerate() {
        let (ga, ba) = (dgs[k].clone(), dbs[k].clone());
        b.if_(active, |b| {
            for (pbase, acc) in [(gamma_base, &ga), (beta_base, &ba)] {
                let pi = element(b, pbase, c, width);
                store_partials(b, &partial, pi, access, acc);
            }
        });
    }
    b.finish()
}
