//! The `mma.sync` of attention's 16-bit element types, with the packing of two f32 into the
//! A operand's word: every attention kernel rounds probabilities (and the backward, score
//! gradients) from an accumulator straight into the next product's operand.

use kernel_macros::device;

/// One warp's `acc + a·b` on an m16n8k16 tile, and the packing of two f32 into the `a`
/// operand's 16-bit pair, for the element type's `mma.sync`.
#[allow(dead_code)]
pub trait PairMma {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4];
    /// `hi` to the upper half, `lo` to the lower, rounded to nearest even.
    fn pack(hi: f32, lo: f32) -> u32;
}

/// bf16 operands.
pub struct Bf16Pairs;
/// f16 operands.
pub struct F16Pairs;

#[device(crate = crate::lang)]
impl PairMma for Bf16Pairs {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
        mma_m16n8k16_bf16(a, b, acc)
    }
    fn pack(hi: f32, lo: f32) -> u32 {
        pack_bf16x2(hi, lo)
    }
}

#[device(crate = crate::lang)]
impl PairMma for F16Pairs {
    fn mma(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
        mma_m16n8k16_f16(a, b, acc)
    }
    fn pack(hi: f32, lo: f32) -> u32 {
        pack_f16x2(hi, lo)
    }
}
