//! Greedy decoding's arg-max over each row, a row split over several CTAs (see `plan`): each
//! CTA walks its segment of the row, every thread [`ARGMAX_UNROLL`] chunks per step with all
//! loads issued before any is used, keeping its best (value, index) at five instructions per
//! element; the CTA keeps the best of those, and `combine` merges the row's segments. Ties go
//! to the lowest index at every step, so the result does not depend on the split. NaN counts
//! as +∞.

use super::combine::{finish, Segment};
use super::plan::ARGMAX_UNROLL;
use crate::codegen::bf16::{bits_to_f32, unpack2, widen as bf16_widen};
use crate::codegen::rows::Group;
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::moves::{load_bits, Bits};
use crate::rowwise::reduce::{Candidate, GroupArgMax};
use crate::rowwise::spec::RowSpec;
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};

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
        // −∞ at the segment's first column: a real entry no larger than any other, so it wins
        // only where every value is −∞, and then it is the right answer.
        let first_col = chunk_start(b, s0, width);
        let best = Candidate {
            value: b.var(ninf),
            index: b.var(first_col),
        };
        let one = b.const_u32(1);
        let last = b.sub(s1, one);
        let start = b.add(s0, tid);
        let unroll = b.const_u32(ARGMAX_UNROLL);
        let step = b.mul(ntid, unroll);
        b.for_range(start, s1, step, |b, c| {
            // Chunks past the segment load its last chunk again (a cache hit): a repeated
            // (value, column) changes no thread's candidate, so no chunk needs a guard.
            let loaded: Vec<_> = (0..ARGMAX_UNROLL)
                .map(|i| {
                    let ci = if i == 0 {
                        c
                    } else {
                        let i = b.const_u32(i);
                        b.mad(i, ntid, c)
                    };
                    let ci = b.min(ci, last);
                    let idx = element(b, base, ci, width);
                    (ci, load_bits(b, &logits, idx, spec.access))
                })
                .collect();
            for (ci, bits) in loaded {
                let col0 = chunk_start(b, ci, width);
                for (k, v) in widen(b, bits, storage).into_iter().enumerate() {
                    // `min` returns its other operand for NaN: NaN counts as +∞.
                    let v = b.min(v, pinf);
                    let col = if k == 0 {
                        col0
                    } else {
                        let k = b.const_u32(k as u32);
                        b.add(col0, k)
                    };
                    // A thread meets its columns in increasing order (repeats aside), so a
                    // strictly greater value is the only one that may replace its candidate.
                    let greater = b.setp(Cmp::Gt, v, best.value);
                    let value = b.selp(greater, v, best.value);
                    let index = b.selp(greater, col, best.index);
                    b.assign(best.value, value);
                    b.assign(best.index, index);
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

/// A chunk's elements as f32, in column order.
fn widen(b: &mut KernelBuilder, bits: Bits, storage: FloatType) -> Vec<Value<F32>> {
    match (bits, storage) {
        (Bits::Vector(w), FloatType::F32) => w.iter().map(|&w| bits_to_f32(b, w)).collect(),
        (Bits::Vector(w), FloatType::Bf16) => w.iter().flat_map(|&w| unpack2(b, w)).collect(),
        (Bits::Vector(_), FloatType::F16) => {
            unreachable!("argmax kernels are built for f32 and bf16 only")
        }
        (Bits::Word(w), _) => vec![bits_to_f32(b, w)],
        (Bits::Half(h), _) => vec![bf16_widen(b, h)],
    }
}
