//! Index arithmetic of the norm kernels: chunk `c` of row `base` starts at element
//! `base + c·width`.

use crate::codegen::guarded::{load_if, RawChunk};
use crate::codegen::tensor::{Access, Tensor};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::scalar::{Pred, U32};

/// `c · width` (no instruction for width 1).
pub(crate) fn chunk_start(b: &mut KernelBuilder, c: Value<U32>, width: u32) -> Value<U32> {
    if width == 1 {
        c
    } else {
        b.shl(c, width.trailing_zeros())
    }
}

/// `base + c · width`.
pub(crate) fn element(
    b: &mut KernelBuilder,
    base: Value<U32>,
    c: Value<U32>,
    width: u32,
) -> Value<U32> {
    let off = chunk_start(b, c, width);
    b.add(base, off)
}

/// Chunks per row: `cols / width`.
pub(crate) fn chunks(b: &mut KernelBuilder, cols: Value<U32>, width: u32) -> Value<U32> {
    if width == 1 {
        cols
    } else {
        b.shr(cols, width.trailing_zeros())
    }
}

/// Chunks `slots` (index, active) of the per-column vector `t` (γ), each read where active.
pub(crate) fn load_columns(
    b: &mut KernelBuilder,
    t: &Tensor,
    slots: &[(Value<U32>, Value<Pred>)],
    access: Access,
    width: u32,
) -> Vec<RawChunk> {
    slots
        .iter()
        .map(|&(c, active)| {
            let start = chunk_start(b, c, width);
            load_if(b, t, start, access, active)
        })
        .collect()
}
