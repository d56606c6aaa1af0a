//! Greedy decoding's arg-max over each row: every thread walks its chunks in increasing column
//! order (several loads in flight per step) keeping the best (value, index), then the group
//! keeps the best of those, ties going to the lowest index. NaN counts as +∞.

use crate::codegen::rows::{for_each_row, Row};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::reduce::{keep_best, Candidate, GroupArgMax};
use crate::rowwise::spec::RowSpec;
use crate::rowwise::unroll::{for_chunk_groups, load_slots};
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::Kernel;
use kernel_dsl::op::Cmp;

/// Parameters: `logits, index, rows, cols`.
pub(crate) fn argmax(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("argmax_{}", spec.suffix()));
    let logits = tensor_param(&mut b, "logits", storage, false);
    let index = b.param_slice_mut::<U32>("index");
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let width = spec.access.width(storage);
    let nchunks = chunks(&mut b, cols, width);
    let reducer = GroupArgMax::new(&mut b, spec.group);

    for_each_row(&mut b, spec.group, rows, |b, row: Row| {
        let base = b.mul(row.row, cols);
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let pinf = b.const_f32(f32::INFINITY);
        let none = b.const_u32(u32::MAX);
        let best = Candidate {
            value: b.var(ninf),
            index: b.var(none),
        };
        for_chunk_groups(b, &row, 0, nchunks, width, |b, slots| {
            let loaded = load_slots(b, slots, width, f32::NEG_INFINITY, |b, c| {
                let idx = element(b, base, c, width);
                logits.load_n(b, idx, spec.access)
            });
            for (&(c, active), vals) in slots.iter().zip(loaded) {
                let col0 = chunk_start(b, c, width);
                for (k, v) in vals.into_iter().enumerate() {
                    let nan = b.setp(Cmp::Nan, v, v);
                    let v = b.selp(nan, pinf, v);
                    let col = if k == 0 {
                        col0
                    } else {
                        let k = b.const_u32(k as u32);
                        b.add(col0, k)
                    };
                    // Chunks past the row never win: they carry the "no index" marker.
                    let index = b.selp(active, col, none);
                    keep_best(b, best, Candidate { value: v, index });
                }
            }
        });
        let top = reducer.argmax(b, best);
        let zero = b.const_u32(0);
        let first = b.setp(Cmp::Eq, row.lane, zero);
        b.if_(first, |b| b.st_global(&index, row.row, top.index));
    });
    b.finish()
}
