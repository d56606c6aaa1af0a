//! Deterministic column sums for the γ/β gradients: each CTA of a backward kernel owns one
//! row of a `parts × cols` f32 workspace (no atomics); [`column_sum`] then adds the rows of
//! each column in index order.

use crate::codegen::map::load_run;
use crate::codegen::map::store_run;
use crate::codegen::tensor::{tensor_param, tensor_param_of, Access, Format, Tensor};
use crate::Storage;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::{Dim, Kernel};

/// Most CTAs a backward launch uses, so the workspace is at most this many rows.
pub(crate) const MAX_PARTS: u32 = 1024;

/// Loads `width` f32 partials at `idx` (vectors where `access` is vectorized).
pub(crate) fn load_partials(
    b: &mut KernelBuilder,
    t: &Tensor,
    idx: Value<U32>,
    access: Access,
    width: u32,
) -> Vec<Value<F32>> {
    match access {
        Access::Vector => load_run(b, t, idx, width),
        Access::Scalar => vec![t.load(b, idx)],
    }
}

/// Stores `vals` as f32 partials at `idx`.
pub(crate) fn store_partials(
    b: &mut KernelBuilder,
    t: &Tensor,
    idx: Value<U32>,
    access: Access,
    vals: &[Value<F32>],
) {
    match access {
        Access::Vector => store_run(b, t, idx, vals),
        Access::Scalar => t.store(b, idx, vals[0]),
    }
}

/// `out[c] = Σ_{p < parts} partial[p·cols + c]`, in order of `p`; one thread per column.
/// Parameters: `partial, out, parts, cols`.
pub(crate) fn column_sum(storage: Storage) -> Kernel {
    let mut b = KernelBuilder::new(format!("norm_column_sum_{}", storage.suffix()));
    let partial = tensor_param_of(&mut b, "partial", Format::F32, false);
    let out = tensor_param(&mut b, "out", storage, true);
    let parts = b.param::<U32>("parts");
    let cols = b.param::<U32>("cols");
    let start = b.global_index(Dim::X);
    let stride = b.grid_stride(Dim::X);
    b.for_range(start, cols, stride, |b, c| {
        let zero = b.const_f32(0.0);
        let acc = b.var(zero);
        let zero_u = b.const_u32(0);
        let one = b.const_u32(1);
        let idx = b.var(c);
        b.for_range(zero_u, parts, one, |b, _| {
            let v = partial.load(b, idx);
            let s = b.add(acc, v);
            b.assign(acc, s);
            let next = b.add(idx, cols);
            b.assign(idx, next);
        });
        out.store(b, c, acc);
    });
    b.finish()
}
