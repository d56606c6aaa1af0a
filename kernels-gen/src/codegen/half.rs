//! f16 ⇄ f32 in registers with `cvt` (exact widening; narrowing rounds to nearest even), on
//! every target.

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::{CvtRounding, Op};
use kernel_dsl::scalar::{F32, U16, U32};
use kernel_dsl::ScalarType;

use super::fresh;

/// Widens one f16 held in a u16 register.
pub fn widen(b: &mut KernelBuilder, h: Value<U16>) -> Value<F32> {
    let f = fresh::<F32>(b);
    b.inst(
        Op::Cvt {
            dst: ScalarType::F32,
            src: ScalarType::F16,
            rnd: None,
            ftz: false,
            sat: false,
            relu: false,
        },
        vec![f.reg().into()],
        vec![h.reg().into()],
    );
    f
}

/// Rounds one f32 to f16 (nearest even), as its 16-bit pattern.
pub fn narrow(b: &mut KernelBuilder, v: Value<F32>) -> Value<U16> {
    let h = fresh::<U16>(b);
    b.inst(
        Op::Cvt {
            dst: ScalarType::F16,
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

/// The two f16 halves of a little-endian word, in element order.
pub fn unpack2(b: &mut KernelBuilder, word: Value<U32>) -> [Value<F32>; 2] {
    let lo = b.cvt::<U16, U32>(word);
    let high = b.shr(word, 16);
    let hi = b.cvt::<U16, U32>(high);
    [widen(b, lo), widen(b, hi)]
}

/// Packs two f32 (`lo` first in memory) into one word of two f16, each rounded to nearest
/// even.
pub fn pack2(b: &mut KernelBuilder, lo: Value<F32>, hi: Value<F32>) -> Value<U32> {
    let l = narrow(b, lo);
    let h = narrow(b, hi);
    let l = b.cvt::<U32, U16>(l);
    let h = b.cvt::<U32, U16>(h);
    let h = b.shl(h, 16);
    b.or(l, h)
}

/// `v` rounded to f16 precision and widened back.
pub fn round(b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
    let h = narrow(b, v);
    widen(b, h)
}
