//! Embedding forward: row `t` of the output is row `ids[t]` of the table (NaN where the id is
//! not below `vocab`, so a bad id shows).

use crate::codegen::rows::{for_each_row, Row};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunks, element};
use crate::rowwise::moves::{load_bits, nan_bits, store_bits};
use crate::rowwise::spec::RowSpec;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::Kernel;
use kernel_dsl::op::Cmp;

/// Parameters: `table, ids, out, tokens, hidden, vocab`.
pub(crate) fn gather(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("embedding_{}", spec.suffix()));
    let table = tensor_param(&mut b, "table", storage, false);
    let ids = b.param_slice::<U32>("ids");
    let out = tensor_param(&mut b, "out", storage, true);
    let tokens = b.param::<U32>("tokens");
    let hidden = b.param::<U32>("hidden");
    let vocab = b.param::<U32>("vocab");
    let width = spec.access.width(storage);
    let nchunks = chunks(&mut b, hidden, width);

    for_each_row(&mut b, spec.group, tokens, |b, row: Row| {
        let id = b.ld_global(&ids, row.row);
        let valid = b.setp(Cmp::Lt, id, vocab);
        let src = b.mul(id, hidden);
        let dst = b.mul(row.row, hidden);
        b.for_range(row.lane, nchunks, row.width, |b, c| {
            let o = element(b, dst, c, width);
            b.if_else(
                valid,
                |b| {
                    let i = element(b, src, c, width);
                    let v = load_bits(b, &table, i, spec.access);
                    store_bits(b, &out, o, v);
                },
                |b| {
                    let nan = nan_bits(b, out.format(), spec.access);
                    store_bits(b, &out, o, nan);
                },
            );
        });
    });
    b.finish()
}
