//! Raw copies for the ops that only move elements (layouts, gathers): chunks travel as bits,
//! so every value (NaN payloads included) arrives unchanged, with no conversion instructions,
//! and the bf16 movers need nothing newer than sm_70.

use crate::codegen::tensor::{Access, Tensor};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::scalar::{U16, U32};
use kernel_dsl::StateSpace;

/// One chunk's bits: a 16-byte vector, one 32-bit element or one 16-bit element.
#[derive(Clone, Copy)]
pub(crate) enum Bits {
    Vector([Value<U32>; 4]),
    Word(Value<U32>),
    Half(Value<U16>),
}

/// Loads the chunk at element `index` of a read-only tensor (non-coherent path).
pub(crate) fn load_bits(
    b: &mut KernelBuilder,
    t: &Tensor,
    index: Value<U32>,
    access: Access,
) -> Bits {
    let addr = t.address(b, index).reg();
    match (access, t.format()) {
        (Access::Vector, _) => Bits::Vector(b.load_v4::<U32>(StateSpace::Global, addr, 0, true)),
        (Access::Scalar, FloatType::F32) => {
            Bits::Word(b.load::<U32>(StateSpace::Global, addr, 0, true))
        }
        (Access::Scalar, _) => Bits::Half(b.load::<U16>(StateSpace::Global, addr, 0, true)),
    }
}

/// Stores a chunk's bits at element `index`.
pub(crate) fn store_bits(b: &mut KernelBuilder, t: &Tensor, index: Value<U32>, bits: Bits) {
    let addr = t.address(b, index).reg();
    match bits {
        Bits::Vector(w) => b.store_v4(StateSpace::Global, addr, 0, w),
        Bits::Word(w) => b.store(StateSpace::Global, addr, 0, w),
        Bits::Half(h) => b.store(StateSpace::Global, addr, 0, h),
    }
}

/// A chunk of quiet NaNs in `format`.
pub(crate) fn nan_bits(b: &mut KernelBuilder, format: FloatType, access: Access) -> Bits {
    let word = match format {
        FloatType::F32 => 0x7fc0_0000,
        FloatType::Bf16 => 0x7fc0_7fc0,
        FloatType::F16 => 0x7e00_7e00,
    };
    let w = b.const_u32(word);
    match (access, format) {
        (Access::Vector, _) => Bits::Vector([w; 4]),
        (Access::Scalar, FloatType::F32) => Bits::Word(w),
        (Access::Scalar, _) => Bits::Half(b.cvt::<U16, U32>(w)),
    }
}

/// The chunk's bits widened to one u32 (scalar chunks only; halves are zero-extended).
pub(crate) fn to_word(b: &mut KernelBuilder, bits: Bits) -> Value<U32> {
    match bits {
        Bits::Word(w) => w,
        Bits::Half(h) => b.cvt::<U32, U16>(h),
        Bits::Vector(w) => w[0],
    }
}

/// A scalar chunk of `format` from a u32 made by [`to_word`].
pub(crate) fn from_word(b: &mut KernelBuilder, w: Value<U32>, format: FloatType) -> Bits {
    match format {
        FloatType::F32 => Bits::Word(w),
        _ => Bits::Half(b.cvt::<U16, U32>(w)),
    }
}
