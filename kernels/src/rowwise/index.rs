//! Index arithmetic of chunked rows (chunk `c` of a row starting at element `base` starts at
//! `base + c·width`) and the float guards the online max/sum needs.

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};

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

/// Chunks per row: `cols / width` (`cols` is a multiple of `width` for vector access).
pub(crate) fn chunks(b: &mut KernelBuilder, cols: Value<U32>, width: u32) -> Value<U32> {
    if width == 1 {
        cols
    } else {
        b.shr(cols, width.trailing_zeros())
    }
}

/// `m`, or 0 where `m` is −∞: the reference point subtracted before `ex2`, so a row (or a
/// thread's share of one) that holds only −∞ gives `ex2(−∞) = 0` instead of `ex2(NaN)`.
pub(crate) fn finite_or_zero(b: &mut KernelBuilder, m: Value<F32>) -> Value<F32> {
    let ninf = b.const_f32(f32::NEG_INFINITY);
    let zero = b.const_f32(0.0);
    let is_ninf = b.setp(Cmp::Eq, m, ninf);
    b.selp(is_ninf, zero, m)
}
