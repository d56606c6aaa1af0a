//! bf16 ⇄ f32 in registers. Unpacking is a shift or a mask (exact, every target); packing
//! rounds to nearest even with `cvt.rn.bf16x2.f32` / `cvt.rn.bf16.f32` (sm_80+).

use super::fresh;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Imm, Operand};
use kernel_dsl::op::{CvtRounding, Op};
use kernel_dsl::scalar::{B32, F32, U16, U32};
use kernel_dsl::ScalarType;

/// Reinterprets the bits of a 32-bit integer as an f32 (`mov.b32`).
pub fn bits_to_f32(b: &mut KernelBuilder, bits: Value<U32>) -> Value<F32> {
    let f = fresh::<F32>(b);
    b.inst(
        Op::Mov {
            ty: ScalarType::B32,
        },
        vec![f.reg().into()],
        vec![bits.reg().into()],
    );
    f
}

/// Reinterprets an f32 as its 32-bit pattern (`mov.b32`).
pub fn f32_to_bits(b: &mut KernelBuilder, v: Value<F32>) -> Value<U32> {
    let u = fresh::<U32>(b);
    b.inst(
        Op::Mov {
            ty: ScalarType::B32,
        },
        vec![u.reg().into()],
        vec![v.reg().into()],
    );
    u
}

/// The two bf16 halves of a little-endian word as f32: `[low, high]`, i.e. element order.
pub fn unpack2(b: &mut KernelBuilder, word: Value<U32>) -> [Value<F32>; 2] {
    let lo = b.shl(word, 16);
    let mask = b.const_u32(0xffff_0000);
    let hi = b.and(word, mask);
    [bits_to_f32(b, lo), bits_to_f32(b, hi)]
}

/// Widens one bf16 held in the low 16 bits of a u16 register.
pub fn widen(b: &mut KernelBuilder, half: Value<U16>) -> Value<F32> {
    let wide = b.cvt::<U32, U16>(half);
    let bits = b.shl(wide, 16);
    bits_to_f32(b, bits)
}

/// Packs two f32 (element order: `lo` first in memory) into one word, rounding each to nearest
/// even.
pub fn pack2(b: &mut KernelBuilder, lo: Value<F32>, hi: Value<F32>) -> Value<U32> {
    let packed: Value<B32> = b.pack_bf16x2(hi, lo);
    let u = fresh::<U32>(b);
    b.inst(
        Op::Mov {
            ty: ScalarType::B32,
        },
        vec![u.reg().into()],
        vec![packed.reg().into()],
    );
    u
}

/// Rounds one f32 to bf16 (nearest even), as the 16-bit pattern.
pub fn narrow(b: &mut KernelBuilder, v: Value<F32>) -> Value<U16> {
    let h = fresh::<U16>(b);
    b.inst(
        Op::Cvt {
            dst: ScalarType::Bf16,
            src: ScalarType::F32,
            rnd: Some(CvtRounding::Rn),
            ftz: false,
            sat: false,
            relu: false,
        },
        vec![h.reg().into()],
        vec![v.reg().into()],
    );
    h
}

/// `v` rounded to bf16 precision and widened back (what storing and reloading would give).
pub fn round(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let h = narrow(b, v);
    widen(b, h)
}

/// A `u32` immediate operand.
pub fn imm(v: i64) -> Operand {
    Operand::Imm(Imm::Int(v))
}
