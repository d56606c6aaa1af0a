//! The 8-bit float formats of `cvt` (`.e4m3x2`, `.e5m2x2`): OCP FP8, as NVIDIA implements it.
//!
//! E4M3 has 4 exponent bits (bias 7) and 3 mantissa bits, no infinities, and its largest value
//! is 448 (exponent field 15 with mantissa 0b111 is NaN). E5M2 is IEEE-like with bias 15.

use super::round::{round_f64, widen_to_f64, IeeeFormat, Rounding};

/// One of the two FP8 formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp8 {
    E4m3,
    E5m2,
}

/// E4M3's exponent range and precision are those of a binary format with 5 exponent bits and
/// 3 mantissa bits scaled by 2^8: rounding there gives E4M3's bits directly.
const E4M3_AS_SCALED: IeeeFormat = IeeeFormat {
    exp_bits: 5,
    man_bits: 3,
};
const E5M2: IeeeFormat = IeeeFormat {
    exp_bits: 5,
    man_bits: 2,
};

impl Fp8 {
    /// Rounds `v` to nearest even. `satfinite` clamps overflow to the largest finite value (for
    /// E4M3 an overflow is NaN otherwise; PTX requires `.satfinite` for it).
    pub fn from_f64(self, v: f64, satfinite: bool, relu: bool) -> u8 {
        if v.is_nan() {
            return 0x7f;
        }
        let v = if relu && v < 0.0 { 0.0 } else { v };
        let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
        let a = v.abs();
        match self {
            Fp8::E4m3 => {
                let bits = round_f64(a * 2f64.powi(-8), E4M3_AS_SCALED, Rounding::NearestEven);
                // 0x7f would be NaN: anything from there up overflowed past 448.
                if bits >= 0x7f {
                    return sign | if satfinite { 0x7e } else { 0x7f };
                }
                sign | bits as u8
            }
            Fp8::E5m2 => {
                let bits = round_f64(a, E5M2, Rounding::NearestEven) as u8;
                if bits == 0x7c && satfinite {
                    return sign | 0x7b;
                }
                sign | bits
            }
        }
    }

    /// The exact value of `bits`.
    pub fn to_f64(self, bits: u8) -> f64 {
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let mag = bits & 0x7f;
        match self {
            Fp8::E4m3 if mag == 0x7f => f64::NAN,
            Fp8::E4m3 => sign * widen_to_f64(mag as u64, E4M3_AS_SCALED) * 256.0,
            Fp8::E5m2 => sign * widen_to_f64(mag as u64, E5M2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_covers_its_range_and_saturates_at_448() {
        assert_eq!(Fp8::E4m3.from_f64(1.0, true, false), 0x38);
        assert_eq!(Fp8::E4m3.from_f64(448.0, true, false), 0x7e);
        assert_eq!(Fp8::E4m3.from_f64(1e6, true, false), 0x7e);
        assert_eq!(Fp8::E4m3.from_f64(-1e6, true, false), 0xfe);
        assert_eq!(Fp8::E4m3.from_f64(2f64.powi(-9), true, false), 0x01);
        assert_eq!(Fp8::E4m3.to_f64(0x01), 2f64.powi(-9));
        assert_eq!(Fp8::E4m3.to_f64(0x7e), 448.0);
        assert!(Fp8::E4m3.to_f64(0x7f).is_nan());
        // 1.0625 is halfway between 1.0 and 1.125: ties to even.
        assert_eq!(Fp8::E4m3.from_f64(1.0625, true, false), 0x38);
        assert_eq!(Fp8::E4m3.from_f64(-2.0, true, true), 0x00);
        for bits in 0..=0x7eu8 {
            assert_eq!(
                Fp8::E4m3.from_f64(Fp8::E4m3.to_f64(bits), true, false),
                bits
            );
        }
    }

    #[test]
    fn e5m2_is_ieee_like_with_saturation() {
        assert_eq!(Fp8::E5m2.from_f64(1.0, false, false), 0x3c);
        assert_eq!(Fp8::E5m2.from_f64(57344.0, false, false), 0x7b);
        assert_eq!(Fp8::E5m2.from_f64(1e9, false, false), 0x7c);
        assert_eq!(Fp8::E5m2.from_f64(1e9, true, false), 0x7b);
        assert_eq!(Fp8::E5m2.to_f64(0x7c), f64::INFINITY);
        for bits in 0..0x7cu8 {
            assert_eq!(
                Fp8::E5m2.from_f64(Fp8::E5m2.to_f64(bits), false, false),
                bits
            );
        }
    }
}
