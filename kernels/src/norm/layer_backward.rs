//! LayerNorm backward. With `x̂ = (x − mean)·rstd` and `g = γ·dy`:
//! `dx = rstd·(g − mean(g) − x̂·mean(g·x̂))`; the γ and β gradients `Σ_rows dy·x̂` and
//! `Σ_rows dy` go to two `parts × cols` workspace blocks (γ first), one row per CTA.
//!
//! Every statistic comes from one reduction of four sums over `d = x − x₀` (the row's first
//! element): `Σ d`, `Σ d²`, `Σ g`, `Σ g·d`, giving `mean = x₀ + Σd/n`, `var = Σd²/n − (Σd/n)²`
//! and `Σ g·x̂ = rstd·(Σ g·d − (Σd/n)·Σ g)`. Shifting by an element of the row keeps the
//! variance's cancellation small even where the mean is far from zero. Each CTA loops over
//! rows; where registers allow (bf16) it loads its next row while it reduces and writes the
//! current one (see `prefetch`).

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
use crate::codegen::tensor::{tensor_param, Access};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};

/// Parameters: `x, gamma, dy, dx, partial, rows, cols, eps`. CTA-per-row specs only.
pub(crate) fn layer_norm_backward(spec: RowSpec) -> Kernel {
    let RowSpec {
        storage,
        access,
        group,
    } = spec;
    let mut b = KernelBuilder::new(format!("layer_norm_backward_{}", spec.suffix()));
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
    let reducer = BlockSums::new(&mut b, "row_sums", 4);
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

    // γ is read where it is used, from L1 (see `rms_backward`).
    let load_gamma =
        |b: &mut KernelBuilder| -> Vec<RawChunk> { load_columns(b, &gamma, &slots, access, width) };
    let prefetch = Prefetch::new(&mut b, vec![&x, &dy], slots.clone(), access, width, cols);
    // Each row's first element, the shift of its sums (see the module docs).
    let next_shift = RawChunk::zeroed(&mut b, storage, Access::Scalar);
    let issue = |b: &mut KernelBuilder, row: Value<U32>| {
        prefetch.issue(b, row, rows);
        let exists = b.setp(Cmp::Lt, row, rows);
        let first = b.mul(row, cols);
        next_shift.load_into(b, &x, first, exists);
    };
    let take = |b: &mut KernelBuilder| (prefetch.take(b), next_shift.copied(b));
    // Registers per thread of a row's held chunks of one tensor, as loaded.
    let held_words = count * access.width(storage) * storage.bytes() as u32 / 4;
    let ahead = prefetches(access, held_words, 2 * count * width);
    if ahead {
        issue(&mut b, ctaid);
    }

    for_each_row(&mut b, group, rows, |b, row| {
        let base = b.mul(row.row, cols);
        let (held_rows, shift) = if ahead {
            let taken = take(b);
            let following = b.add(row.row, nctaid);
            issue(b, following);
            taken
        } else {
            issue(b, row.row);
            take(b)
        };
        let shift = shift.widen(b)[0];

        // Σ d, Σ d², Σ g and Σ g·d over the row, with d = x − shift and g = γ·dy.
        let sums: Vec<Value<F32>> = (0..4).map(|_| b.var(zero)).collect();
        let accumulate =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let d = b.sub(xv, shift);
                    let g = b.mul(gv, dv);
                    let terms = [
                        b.add(sums[0], d),
                        b.fma(d, d, sums[1]),
                        b.add(sums[2], g),
                        b.fma(g, d, sums[3]),
                    ];
                    for (&s, t) in sums.iter().zip(terms) {
                        b.assign(s, t);
                    }
                }
            };
        // Inactive chunks hold zeros but would add d = −shift: they are left out.
        let gammas = load_gamma(b);
        for (k, (raws, g)) in held_rows.iter().zip(&gammas).enumerate() {
            let xs = raws[0].widen(b);
            let ds = raws[1].widen(b);
            let gs = g.widen(b);
            b.if_(slots[k].1, |b| accumulate(b, &xs, &ds, &gs));
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            accumulate(b, &xs, &ds, &gs);
        });
        let totals = reducer.sum(b, &sums);
        let stats = Stats::new(b, &totals, cols_f, eps);

        // dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) as rstd·g + c₁·d + c₀, and x̂, whose products
        // with dy are the γ-gradient terms (dy alone is the β term).
        let grad =
            |b: &mut KernelBuilder, xs: &[Value<F32>], ds: &[Value<F32>], gs: &[Value<F32>]| {
                let mut out = Vec::new();
                let mut xhs = Vec::new();
                for ((&xv, &dv), &gv) in xs.iter().zip(ds).zip(gs) {
                    let g = b.mul(gv, dv);
                    let d = b.sub(xv, shift);
                    let inner = b.fma(stats.c1, d, stats.c0);
                    out.push(b.fma(stats.rstd, g, inner));
                    xhs.push(b.fma(d, stats.rstd, stats.xh0));
                }
                (out, xhs)
            };
        // The held chunks are kept as loaded across the reduction and widened again here.
        let gammas = load_gamma(b);
        for (k, (raws, g)) in held_rows.iter().zip(&gammas).enumerate() {
            let (c, active) = slots[k];
            let (ga, ba) = (&dgs[k], &dbs[k]);
            let xs = raws[0].widen(b);
            let ds = raws[1].widen(b);
            let gs = g.widen(b);
            let (out, xhs) = grad(b, &xs, &ds, &gs);
            // Inactive chunks add zeros to their (never stored) accumulators.
            for ((&d, &xh), (&a, &bb)) in ds.iter().zip(&xhs).zip(ga.iter().zip(ba)) {
                let s = b.fma(d, xh, a);
                b.assign(a, s);
                let t = b.add(bb, d);
                b.assign(bb, t);
            }
            b.if_(active, |b| {
                let idx = element(b, base, c, width);
                dx.store_n(b, idx, access, &out);
            });
        }
        for_overflow(b, &row, nchunks, count, |b, c| {
            let idx = element(b, base, c, width);
            let gi = chunk_start(b, c, width);
            let xs = x.load_n(b, idx, access);
            let ds = dy.load_n(b, idx, access);
            let gs = gamma.load_n(b, gi, access);
            let (out, xhs) = grad(b, &xs, &ds, &gs);
            dx.store_n(b, idx, access, &out);
            let pi = element(b, gamma_base, c, width);
            let old = load_partials(b, &partial, pi, access, width);
            let new: Vec<Value<F32>> = old
                .iter()
                .zip(ds.iter().zip(&xhs))
                .map(|(&o, (&d, &xh))| b.fma(d, xh, o))
                .collect();
            store_partials(b, &partial, pi, access, &new);
            let pi = element(b, beta_base, c, width);
            let old = load_partials(b, &partial, pi, access, width);
            let new: Vec<Value<F32>> = old.iter().zip(&ds).map(|(&o, &d)| b.add(o, d)).collect();
            store_partials(b, &partial, pi, access, &new);
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

/// A row's statistics from its shifted sums `[Σ d, Σ d², Σ g, Σ g·d]` (`d = x − shift`), as
/// the coefficients of `dx = rstd·g + c₁·d + c₀` and `x̂ = rstd·d + xh0`.
struct Stats {
    rstd: Value<F32>,
    /// `−rstd²·mean(g·x̂)`.
    c1: Value<F32>,
    /// `−rstd·mean(g) − c₁·(mean − shift)`.
    c0: Value<F32>,
    /// `−rstd·(mean − shift)`.
    xh0: Value<F32>,
}

impl Stats {
    fn new(b: &mut KernelBuilder, sums: &[Value<F32>], n: Value<F32>, eps: Value<F32>) -> Stats {
        let mean_d = b.div(sums[0], n);
        let msq = b.div(sums[1], n);
        let m2 = b.mul(mean_d, mean_d);
        let var = b.sub(msq, m2);
        // Rounding can take a constant row's variance just below zero.
        let zero = b.const_f32(0.0);
        let var = b.max(var, zero);
        let shifted = b.add(var, eps);
        let rstd = math::rsqrt_rn(b, shifted);
        let mean_g = b.div(sums[2], n);
        // Σ g·x̂ = rstd·(Σ g·d − mean_d·Σ g).
        let centered = b.mul(mean_d, sums[2]);
        let gd = b.sub(sums[3], centered);
        let gx = b.mul(gd, rstd);
        let mean_gx = b.div(gx, n);
        let r2 = b.mul(rstd, rstd);
        let c1 = b.mul(r2, mean_gx);
        let c1 = b.neg(c1);
        let rg = b.mul(rstd, mean_g);
        let shift_term = b.mul(c1, mean_d);
        let c0 = b.add(rg, shift_term);
        let c0 = b.neg(c0);
        let xh0 = b.mul(rstd, mean_d);
        let xh0 = b.neg(xh0);
        Stats { rstd, c1, c0, xh0 }
    }
}
