//! Numerics shared by the interpreter: correct rounding into every float format, f32/f64/f16/
//! bf16 arithmetic with PTX's modifiers, conversions, approximations and bit manipulation.

mod approx;
mod bits;
mod convert;
mod float;
mod fp8;
mod round;

pub use approx::{approx_f32, approx_f64, Approx};
pub use bits::{bfe, bfi, bfind, lop3, prmt, shf, PrmtMode};
pub use convert::{convert, pack_half2_from_f32, CvtMode, CvtRounding, CvtType};
pub use float::{
    f32_minmax, f32_op, f32_result, f64_minmax, f64_op, f64_result, flush_f32, half_minmax,
    half_op, saturate_f32, FloatMode, Half, RoundedOp, F32_CANONICAL_NAN,
};
pub use fp8::Fp8;
pub use round::{
    round_exact, round_f64, round_f64_with_error, two_prod, two_sum, widen_to_f64, IeeeFormat,
    Rounding,
};
