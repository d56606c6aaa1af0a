//! RMSNorm backward. With `rstd = 1/√(mean(x²) + eps)`:
//! `dx_j = rstd·γ_j·dy_j − x_j·rstd³/n · Σ_i dy_i·γ_i·x_i`, and the γ gradient
//! `Σ_rows dy_j·x_j·rstd` accumulated per CTA into its workspace row (see `partials`).
//!
//! Each CTA loops over rows `ctaid, ctaid + nctaid, …`; γ and the γ-gradient of the thread's
//! held columns stay in registers for the whole loop. Where registers allow (bf16), the next
//! row's held x and dy are loaded while the current row is reduced and written (see
//! `prefetch`); otherwise a row's loads are all issued together at its top.

use super::partials::{load_partials, store_partials};
use super::prefetch::{prefetches, Prefetch, BACKWARD_MAX_REGS};
use super::row_io::{chunk_start, chunks, element, load_columns};
use super::spec::RowSpec;
use crate::codegen::guarded::RawChunk;
use crate::codegen::math;
use crate::codegen::multi_sum::BlockSums;
use crate::codegen::rows::{
    for_each_row, for_overflow, held, held_chunks_of, Row, BACKWARD_HELD_ELEMS,
};
use crate::codegen::tensor::tensor_param;
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::scalar::{F32, U32};

/// Parameters: `x, gamma, dy, dx, partial, rows, cols, eps`. CTA-per-row specs only.
pub(crate) fn rms_norm_backward(spec: RowSpec) -> Kernel {
    let RowSpec {
        storage,
        access,
        group,
    } = spec;
    let mut b = KernelBuilder::new(format!("rms_norm_backward_{}", spec.suffix()));
    b.perf_mut().maxnreg = Some(BACKWARD_MAX_REGS);
    let x = tensor_param(&mut b, "x", storage, false);
    let gamma = tensor_param(&mut b, "gamma", storage, false);
    let dy = tensor_param(&mut b, "dy", storage, false);
    let dx = tensor_param(&mut b, "dx", storage, true);
    let partial = tensor_param(&mut b, "partial", FloatType::F32, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let eps = b.param::<F32>("eps");

    let width = access.width(storage);
    let count = held_chunks_of(storage, access, BACKWARD_HELD_ELEMS);
    let nchunks = chunks(&mut b, cols, width);
    let cols_f = b.cvt::<F32, U32>(cols);
    let reducer = BlockSums::new(&mut b, "row_sums", 2);
    let zero = b.const_f32(0.0);

    // This CTA's workspace row and the thread's place in a row (the same for every row).
    let ctaid = b.ctaid(Dim::X);
    let part_base = b.mul(ctaid, cols);
    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    let place = Row {
        row: ctaid,
        lane: tid,
        width: ntid,
    };
    let slots = held(&mut b, &place, nchunks, count);
    let mut grads = Vec::new();
    for _ in &slots {
        grads.push((0..width).map(|_| b.var(zero)).collect::<Vec<_>>());
    }
    for_overflow(&mut b, &place, nchunks, count, |b, c| {
        let pi = element(b, part_base, c, width);
        let zeros = vec![zero; width as usize];
        store_partials(b, &partial, pi, access, &zeros);
    });

    // γ of the held chunks is read where it is used, from L1 (every CTA reads the same γ);
    // holding it across the row loop would cost the registers of a second CTA per SM.
    let load_gamma =
        |b: &mut KernelBuilder| -> Vec<RawChunk> { load_columns(b, &gamma, &slots, access, width) };
    let prefetch = Prefetch::new(&mut b, vec![&x, &dy], slots.clone(), access, width, cols);
    // Registers per thread of a row's held chunks of one tensor, as loaded.
    let held_words = count * access.width(storage) * storage.bytes() as u32 / 4;
    let ahead = prefetches(access, held_words, count * width);
    if ahead {
        prefetch.issue(&mut b, ctaid, rows);
    }
    let nctaid = b.nctaid(Dim::X);

    for_each_row(&mut b, group, rows, |b, row| {
        let base = b.mul(row.row, cols);
        let held_rows = if ahead {
            let held_rows = prefetch.take(b);
            let following = b.add(row.row, nctaid);
            prefetch.issue(b, following, rows);
            held_rows
        } else {
            prefetch.issue(b, row.row, rows);
            prefetch.take(b)
        };

        let ss = b.var(zero);
        let dot = b.var(zero);
        let accumulate =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let s = b.fma(xv, xv, ss);
                    b.assign(ss, s);
                    let dg = b.mul(dv, gv);
                    let d = b.fma(dg, xv, dot);
                    b.assign(dot, d);
                }
            };
        // Inactive chunks hold zeros, so they add nothing.
        let gammas = load_gamma(b);
        for (raws, g) in held_rows.iter().zip(&gammas) {
            let xs = raws[0].widen(b);
            let ds = raws[1].widen(b);
            let gs = g.widen(b);
            accumulate(b, &xs, &ds, &gs);
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            accumulate(b, &xs, &ds, &gs);
        });

        let sums = reducer.sum(b, &[ss, dot]);
        let mean = b.div(sums[0], cols_f);
        let shifted = b.add(mean, eps);
        let rstd = math::rsqrt_rn(b, shifted);
        let r2 = b.mul(rstd, rstd);
        let r3 = b.mul(r2, rstd);
        let d3 = b.mul(sums[1], r3);
        let coef = b.div(d3, cols_f);
        let neg_coef = b.neg(coef);

        // dx = rstd·γ·dy − x·coef, and x·rstd, whose product with dy is the γ-gradient term.
        let grad =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                let mut out = Vec::new();
                let mut xr = Vec::new();
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let gd = b.mul(gv, dv);
                    let xc = b.mul(xv, neg_coef);
                    out.push(b.fma(gd, rstd, xc));
                    xr.push(b.mul(xv, rstd));
                }
                (out, xr)
            };
        // The held chunks are kept as loaded across the reduction and widened again here.
        let gammas = load_gamma(b);
        for (k, (raws, g)) in held_rows.iter().zip(&gammas).enumerate() {
            let (c, active) = slots[k];
            let xs = raws[0].widen(b);
            let ds = raws[1].widen(b);
            let gs = g.widen(b);
            let (out, xr) = grad(b, &xs, &ds, &gs);
            // Inactive chunks add zeros to their (never stored) accumulators.
            for ((&a, &d), &r) in grads[k].iter().zip(&ds).zip(&xr) {
                let s = b.fma(d, r, a);
                b.assign(a, s);
            }
            b.if_(active, |b| {
                let idx = element(b, base, c, width);
                dx.store_n(b, idx, access, &out);
            });
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let pi = element(b, part_base, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            let (out, xr) = grad(b, &xs, &ds, &gs);
            dx.store_n(b, idx, access, &out);
            let old = load_partials(b, &partial, pi, access, width);
            let new: Vec<Value<F32>> = old
                .iter()
                .zip(&ds)
                .zip(&xr)
                .map(|((&o, &d), &r)| b.fma(d, r, o))
                .collect();
            store_partials(b, &partial, pi, access, &new);
        });
    });

    for (k, &(c, active)) in slots.iter().enumerate() {
        let acc = grads[k].clone();
        b.if_(active, |b| {
            let pi = element(b, part_base, c, width);
            store_partials(b, &partial, pi, access, &acc);
        });
    }
    b.finish()
}
