//! Greedy decoding's arg-max over each row, a row split over several CTAs (see `plan`): each
//! CTA walks its segment of the row, every thread [`ARGMAX_UNROLL`] chunks per step with all
//! loads issued before any is used, keeping its best (value, index); the CTA keeps the best of
//! those, and `combine` merges the row's segments. Ties go to the lowest index at every step,
//! so the result does not depend on the split. NaN counts as +∞.

use super::combine::{finish, Segment};
use super::plan::ARGMAX_UNROLL;
use crate::codegen::guarded::load_if;
use crate::codegen::rows::Group;
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::reduce::{keep_best, Candidate, GroupArgMax};
use crate::rowwise::spec::RowSpec;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;

/// Parameters: `logits, index, workspace, rows, cols, splits, seg` (chunks per segment).
pub(crate) fn argmax(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("argmax_{}", spec.suffix()));
    let logits = tensor_param(&mut b, "logits", storage, false);
    let index = b.param_slice_mut::<U32>("index");
    let workspace = b.param_slice_mut::<U32>("workspace");
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let splits = b.param::<U32>("splits");
    let seg_len = b.param::<U32>("seg");
    let width = spec.access.width(storage);
    let reducer = GroupArgMax::new(&mut b, Group::Block);

    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    let ctaid = b.ctaid(Dim::X);
    let nctaid = b.nctaid(Dim::X);
    let nchunks = chunks(&mut b, cols, width);
    let segments = b.mul(rows, splits);
    // CTA-uniform: every thread of a CTA works on the same segment.
    b.for_range(ctaid, segments, nctaid, |b, w| {
        let row = b.div(w, splits);
        let first = b.mul(row, splits);
        let split = b.sub(w, first);
        let s0 = b.mul(split, seg_len);
        let s1 = b.add(s0, seg_len);
        let s1 = b.min(s1, nchunks);
        let base = b.mul(row, cols);

        let ninf = b.const_f32(f32::NEG_INFINITY);
        let pinf = b.const_f32(f32::INFINITY);
        let none = b.const_u32(u32::MAX);
        let best = Candidate {
            value: b.var(ninf),
            index: b.var(none),
        };
        let start = b.add(s0, tid);
        let unroll = b.const_u32(ARGMAX_UNROLL);
        let step = b.mul(ntid, unroll);
        b.for_range(start, s1, step, |b, c| {
            let slots: Vec<_> = (0..ARGMAX_UNROLL)
                .map(|i| {
                    let ci = if i == 0 {
                        c
                    } else {
                        let i = b.const_u32(i);
                        b.mad(i, ntid, c)
                    };
                    let active = b.setp(Cmp::Lt, ci, s1);
                    let idx = element(b, base, ci, width);
                    (ci, active, load_if(b, &logits, idx, spec.access, active))
                })
                .collect();
            for (ci, active, raw) in slots {
                let col0 = chunk_start(b, ci, width);
                for (k, v) in raw.widen(b).into_iter().enumerate() {
                    let nan = b.setp(Cmp::Nan, v, v);
                    let v = b.selp(nan, pinf, v);
                    let v = b.selp(active, v, ninf);
                    let col = if k == 0 {
                        col0
                    } else {
                        let k = b.const_u32(k as u32);
                        b.add(col0, k)
                    };
                    // Chunks past the segment never win: −∞ with the "no index" marker.
                    let index = b.selp(active, col, none);
                    keep_best(b, best, Candidate { value: v, index });
                }
            }
        });
        let top = reducer.argmax(b, best);
        let seg = Segment {
            row,
            split,
            splits,
            rows,
        };
        finish(b, &workspace, &index, &seg, top);
    });
    b.finish()
}
