//! Embedding backward without atomics: `dtable[v] = Σ dout[t]` over the tokens `t` with
//! `ids[t] = v`, summed in token order.
//!
//! Each warp owns [`ROWS_PER_WARP`] consecutive vocabulary rows. It scans all token ids in
//! order, 32 at a time, and a ballot marks the ones in its rows; it takes those lowest lane
//! first (earliest token first) and adds the token's gradient row into the table row, all 32
//! lanes across the hidden dimension. The first token of a row stores instead of adding (a
//! bitmask remembers which rows were touched); untouched rows are zeroed at the end. Only the
//! owning warp ever touches a row, so the result is the same on every run.

use super::lookup_kernel::{ROWS_PER_WARP, SCATTER_THREADS};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::bits::{and_pred, ballot, lowest_bit, shl_by};
use crate::rowwise::index::{chunks, element};
use crate::rowwise::spec::RowSpec;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;

/// Parameters: `dout, ids, dtable, tokens, hidden, vocab`.
pub(crate) fn scatter(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let access = spec.access;
    let mut b = KernelBuilder::new(format!("embedding_backward_{}", spec.suffix()));
    b.reqntid([SCATTER_THREADS, 1, 1]);
    let dout = tensor_param(&mut b, "dout", storage, false);
    let ids = b.param_slice::<U32>("ids");
    let dtable = tensor_param(&mut b, "dtable", storage, true);
    let tokens = b.param::<U32>("tokens");
    let hidden = b.param::<U32>("hidden");
    let vocab = b.param::<U32>("vocab");
    let width = access.width(storage);
    let nchunks = chunks(&mut b, hidden, width);

    let tid = b.tid(Dim::X);
    let lane = b.lane_id();
    let warp = b.shr(tid, 5);
    let cta = b.ctaid(Dim::X);
    let warps = b.const_u32(SCATTER_THREADS / 32);
    let global_warp = b.mad(cta, warps, warp);
    let per_warp = b.const_u32(ROWS_PER_WARP);
    let v0 = b.mul(global_warp, per_warp);
    let zero = b.const_u32(0);
    let one = b.const_u32(1);
    let c32 = b.const_u32(32);
    let lanes = c32;
    let touched = b.var(zero);
    let none = b.const_u32(u32::MAX);

    b.for_range(zero, tokens, c32, |b, base| {
        let t = b.add(base, lane);
        let inside = b.setp(Cmp::Lt, t, tokens);
        let id = b.var(none);
        b.if_(inside, |b| {
            let v = b.ld_global(&ids, t);
            b.assign(id, v);
        });
        let rel = b.sub(id, v0);
        let mine = b.setp(Cmp::Lt, rel, per_warp);
        let known = b.setp(Cmp::Lt, id, vocab);
        let hit = and_pred(b, mine, known);
        let mask = ballot(b, hit);
        let pending = b.var(mask);
        b.loop_(|b| {
            let done = b.setp(Cmp::Eq, pending, zero);
            b.if_(done, |b| b.break_());
            let l = lowest_bit(b, pending);
            let less = b.sub(pending, one);
            let rest = b.and(pending, less);
            b.assign(pending, rest);
            let tok = b.add(base, l);
            let v = b.ld_global(&ids, tok);
            let r = b.sub(v, v0);
            let bit = shl_by(b, one, r);
            let seen_bits = b.and(touched, bit);
            let seen = b.setp(Cmp::Ne, seen_bits, zero);
            let now = b.or(touched, bit);
            b.assign(touched, now);
            let src = b.mul(tok, hidden);
            let dst = b.mul(v, hidden);
            b.for_range(lane, nchunks, lanes, |b, c| {
                let i = element(b, src, c, width);
                let o = element(b, dst, c, width);
                let g = dout.load_n(b, i, access);
                let sum: Vec<Value<F32>> = g.iter().map(|&x| b.var(x)).collect();
                b.if_(seen, |b| {
                    let old = dtable.load_n(b, o, access);
                    for (s, o) in sum.iter().zip(old) {
                        let t = b.add(o, *s);
                        b.assign(*s, t);
                    }
                });
                dtable.store_n(b, o, access, &sum);
            });
        });
    });

    // Rows no token touched get zeros.
    b.for_range(zero, per_warp, one, |b, r| {
        let v = b.add(v0, r);
        let in_vocab = b.setp(Cmp::Lt, v, vocab);
        let bit = shl_by(b, one, r);
        let seen_bits = b.and(touched, bit);
        let untouched = b.setp(Cmp::Eq, seen_bits, zero);
        let untouched = and_pred(b, in_vocab, untouched);
        b.if_(untouched, |b| {
            let dst = b.mul(v, hidden);
            let z = b.const_f32(0.0);
            let zs: Vec<Value<F32>> = (0..width).map(|_| z).collect();
            b.for_range(lane, nchunks, lanes, |b, c| {
                let o = element(b, dst, c, width);
                dtable.store_n(b, o, access, &zs);
            });
        });
    });
    b.finish()
}
