//! Index arithmetic of the norm kernels: chunk `c` of row `base` starts at element
//! `base + c·width`.

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::U32;

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
