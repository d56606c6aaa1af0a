//! CPU reference of the narrowing casts, written independently of the bit tricks: scale by the
//! unit in the last place of the target format, round half to even, scale back.

/// A binary floating-point format: mantissa bits (without the implicit bit) and exponent
/// range of normal numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatFormat {
    pub mantissa_bits: i32,
    pub min_exp: i32,
    pub max_exp: i32,
}

/// bfloat16: 7 mantissa bits, f32's exponent range.
pub const BF16: FloatFormat = FloatFormat {
    mantissa_bits: 7,
    min_exp: -126,
    max_exp: 127,
};

/// IEEE half: 10 mantissa bits, exponents −14..=15.
pub const F16: FloatFormat = FloatFormat {
    mantissa_bits: 10,
    min_exp: -14,
    max_exp: 15,
};

/// `x` rounded to nearest even in `format` (subnormals included; beyond the largest finite
/// value, ±∞; NaN stays NaN).
///
/// ```
/// use kernels::cast::reference::{round_to, BF16, F16};
/// assert_eq!(round_to(1.0 + 1.0 / 256.0, BF16), 1.0); // a tie goes to the even 1.0
/// assert_eq!(round_to(65520.0, F16), f64::INFINITY);
/// assert_eq!(round_to(65519.0, F16), 65504.0);
/// ```
pub fn round_to(x: f64, format: FloatFormat) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let exp = (x.abs().log2().floor() as i32).max(format.min_exp);
    // log2 can be off by one at exact powers of two; fix the exponent to bracket |x|.
    let exp = if x.abs() < 2f64.powi(exp) && exp > format.min_exp {
        exp - 1
    } else if x.abs() >= 2f64.powi(exp + 1) {
        exp + 1
    } else {
        exp
    };
    let ulp = 2f64.powi(exp - format.mantissa_bits);
    let y = (x / ulp).round_ties_even() * ulp;
    let max = (2.0 - 2f64.powi(-format.mantissa_bits)) * 2f64.powi(format.max_exp);
    if y.abs() > max {
        f64::INFINITY.copysign(x)
    } else {
        y
    }
}
