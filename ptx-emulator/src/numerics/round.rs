//! Correct rounding of an exact binary value into a narrower IEEE format under any PTX rounding
//! mode. Every conversion and every directed-rounding arithmetic result goes through here, so
//! the rules live in one place.

/// A PTX rounding mode for floating-point results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// To nearest, ties to even (`.rn`).
    NearestEven,
    /// To nearest, ties away from zero (`.rna`, used by `cvt.rna.tf32.f32`).
    NearestAway,
    /// Toward zero (`.rz`).
    Zero,
    /// Toward minus infinity (`.rm`).
    Down,
    /// Toward plus infinity (`.rp`).
    Up,
}

/// An IEEE binary interchange format described by its field widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IeeeFormat {
    pub exp_bits: u32,
    pub man_bits: u32,
}

impl IeeeFormat {
    pub const F64: IeeeFormat = IeeeFormat {
        exp_bits: 11,
        man_bits: 52,
    };
    pub const F32: IeeeFormat = IeeeFormat {
        exp_bits: 8,
        man_bits: 23,
    };
    pub const F16: IeeeFormat = IeeeFormat {
        exp_bits: 5,
        man_bits: 10,
    };
    pub const BF16: IeeeFormat = IeeeFormat {
        exp_bits: 8,
        man_bits: 7,
    };
    /// TensorFloat-32: f32's range with a 10-bit mantissa.
    pub const TF32: IeeeFormat = IeeeFormat {
        exp_bits: 8,
        man_bits: 10,
    };

    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }
    fn max_exp_field(self) -> u64 {
        (1u64 << self.exp_bits) - 1
    }
    fn sign_bit(self) -> u64 {
        1u64 << (self.exp_bits + self.man_bits)
    }
    /// Bits of +infinity.
    pub fn inf(self) -> u64 {
        self.max_exp_field() << self.man_bits
    }
    /// Bits of the largest finite value.
    pub fn max_finite(self) -> u64 {
        self.inf() - 1
    }
    /// Bits of the canonical quiet NaN that NVIDIA hardware produces (all mantissa bits set).
    pub fn canonical_nan(self) -> u64 {
        self.inf() | ((1u64 << self.man_bits) - 1)
    }
}

/// Rounds the exact value `(-1)^negative * mag * 2^exp` to `fmt` under `mode`; returns its bits.
pub fn round_exact(negative: bool, mag: u64, exp: i32, fmt: IeeeFormat, mode: Rounding) -> u64 {
    let sign = if negative { fmt.sign_bit() } else { 0 };
    if mag == 0 {
        return sign;
    }
    let man_bits = fmt.man_bits as i32;
    let emin = 1 - fmt.bias();
    let top = exp + (63 - mag.leading_zeros() as i32);
    let quantum = top.max(emin) - man_bits;
    let shift = quantum - exp;
    let (mut kept, rem_cmp, rem_nonzero, odd) = if shift <= 0 {
        (
            mag << (-shift) as u32,
            std::cmp::Ordering::Less,
            false,
            false,
        )
    } else if shift >= 64 {
        (0u64, std::cmp::Ordering::Less, true, false)
    } else {
        let kept = mag >> shift;
        let rem = mag & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        (kept, rem.cmp(&half), rem != 0, kept & 1 == 1)
    };
    let round_up = match mode {
        Rounding::NearestEven => {
            rem_cmp == std::cmp::Ordering::Greater || (rem_cmp == std::cmp::Ordering::Equal && odd)
        }
        Rounding::NearestAway => rem_cmp != std::cmp::Ordering::Less,
        Rounding::Zero => false,
        Rounding::Up => rem_nonzero && !negative,
        Rounding::Down => rem_nonzero && negative,
    };
    if round_up {
        kept += 1;
    }
    if kept == 0 {
        return sign;
    }
    let mut quantum = quantum;
    let hidden = 1u64 << fmt.man_bits;
    if kept < hidden {
        // Subnormal: the exponent field stays zero.
        return sign | kept;
    }
    if kept >= hidden << 1 {
        kept >>= 1;
        quantum += 1;
    }
    let exp_field = quantum + man_bits + fmt.bias();
    if exp_field as i64 >= fmt.max_exp_field() as i64 {
        let to_inf = match mode {
            Rounding::NearestEven | Rounding::NearestAway => true,
            Rounding::Zero => false,
            Rounding::Up => !negative,
            Rounding::Down => negative,
        };
        return sign | if to_inf { fmt.inf() } else { fmt.max_finite() };
    }
    sign | ((exp_field as u64) << fmt.man_bits) | (kept - hidden)
}

/// Rounds the real number `value + err` to `fmt`, where `value` is an f64 and `err` is an
/// exact correction with `|err| <= ulp(value) / 2` (as produced by TwoSum or an FMA residual).
/// NaN maps to the format's canonical NaN; infinities stay infinities.
pub fn round_f64_with_error(value: f64, err: f64, fmt: IeeeFormat, mode: Rounding) -> u64 {
    if value.is_nan() {
        return fmt.canonical_nan();
    }
    let negative = value.is_sign_negative();
    if value.is_infinite() {
        return if negative {
            fmt.sign_bit() | fmt.inf()
        } else {
            fmt.inf()
        };
    }
    let bits = value.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mag, exp) = if exp_field == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_field - 1075)
    };
    if mag == 0 {
        if err == 0.0 {
            return if negative { fmt.sign_bit() } else { 0 };
        }
        // Only the correction is left: it is the value.
        return round_f64_with_error(err, 0.0, fmt, mode);
    }
    // Three guard bits hold the sign of the correction strictly between grid points, so no
    // rounding boundary of a format at most as precise as f64 can fall between them.
    let toward_larger_magnitude = if err == 0.0 {
        0i64
    } else if (err > 0.0) != negative {
        1
    } else {
        -1
    };
    let scaled = ((mag << 3) as i64 + toward_larger_magnitude) as u64;
    round_exact(negative, scaled, exp - 3, fmt, mode)
}

/// Rounds an f64 to `fmt` (no correction term).
pub fn round_f64(value: f64, fmt: IeeeFormat, mode: Rounding) -> u64 {
    round_f64_with_error(value, 0.0, fmt, mode)
}

/// The f64 value of `bits` in `fmt` (exact: every narrower format fits in f64).
pub fn widen_to_f64(bits: u64, fmt: IeeeFormat) -> f64 {
    let man_mask = (1u64 << fmt.man_bits) - 1;
    let negative = bits & fmt.sign_bit() != 0;
    let exp_field = (bits >> fmt.man_bits) & fmt.max_exp_field();
    let frac = bits & man_mask;
    let magnitude = if exp_field == fmt.max_exp_field() {
        if frac == 0 {
            f64::INFINITY
        } else {
            f64::NAN
        }
    } else if exp_field == 0 {
        frac as f64 * pow2(1 - fmt.bias() - fmt.man_bits as i32)
    } else {
        (frac | (1u64 << fmt.man_bits)) as f64
            * pow2(exp_field as i32 - fmt.bias() - fmt.man_bits as i32)
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// Exact 2^e for the exponents the narrow formats need (no overflow in this range).
fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// Error-free sum: `a + b == s + e` exactly.
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, if s.is_finite() { e } else { 0.0 })
}

/// Error-free product: `a * b == p + e` exactly (barring underflow).
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let e = a.mul_add(b, -p);
    (p, if p.is_finite() { e } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_f64_to_f32_nearest_matches_hardware_cast_on_many_values() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if v.is_nan() {
                continue;
            }
            let want = (v as f32).to_bits() as u64;
            assert_eq!(
                round_f64(v, IeeeFormat::F32, Rounding::NearestEven),
                want,
                "{v:e}"
            );
        }
    }

    #[test]
    fn directed_rounding_of_f64_to_f32_brackets_the_value() {
        let v = 1.0f64 + 1e-10;
        let up = f32::from_bits(round_f64(v, IeeeFormat::F32, Rounding::Up) as u32);
        let down = f32::from_bits(round_f64(v, IeeeFormat::F32, Rounding::Down) as u32);
        let zero = f32::from_bits(round_f64(-v, IeeeFormat::F32, Rounding::Zero) as u32);
        assert_eq!(down, 1.0);
        assert_eq!(up, f32::from_bits(1.0f32.to_bits() + 1));
        assert_eq!(zero, -1.0);
    }

    #[test]
    fn correction_term_decides_directed_rounding_of_representable_sum() {
        // 1 + 2^-60 is 1 in f64; the correction says the true value is above 1.
        let (s, e) = two_sum(1.0, 2f64.powi(-60));
        assert_eq!(s, 1.0);
        assert_eq!(
            round_f64_with_error(s, e, IeeeFormat::F32, Rounding::Up),
            0x3f80_0001
        );
        assert_eq!(
            round_f64_with_error(s, e, IeeeFormat::F32, Rounding::Down),
            0x3f80_0000
        );
        let (s, e) = two_sum(1.0, -(2f64.powi(-60)));
        assert_eq!(
            round_f64_with_error(s, e, IeeeFormat::F32, Rounding::Zero),
            0x3f7f_ffff
        );
        assert_eq!(
            round_f64_with_error(s, e, IeeeFormat::F64, Rounding::Down),
            0x3fef_ffff_ffff_ffff
        );
    }

    #[test]
    fn f16_conversion_handles_subnormals_overflow_and_ties() {
        // Smallest f16 subnormal is 2^-24.
        assert_eq!(
            round_f64(2f64.powi(-24), IeeeFormat::F16, Rounding::NearestEven),
            1
        );
        // Half of it ties to even (zero); rounding up gives the subnormal.
        assert_eq!(
            round_f64(2f64.powi(-25), IeeeFormat::F16, Rounding::NearestEven),
            0
        );
        assert_eq!(round_f64(2f64.powi(-25), IeeeFormat::F16, Rounding::Up), 1);
        assert_eq!(
            round_f64(65520.0, IeeeFormat::F16, Rounding::NearestEven),
            0x7c00
        );
        assert_eq!(round_f64(65520.0, IeeeFormat::F16, Rounding::Zero), 0x7bff);
        assert_eq!(round_f64(-1.0e6, IeeeFormat::F16, Rounding::Up), 0xfbff);
        assert_eq!(
            round_f64(1.0, IeeeFormat::F16, Rounding::NearestEven),
            0x3c00
        );
        assert_eq!(widen_to_f64(0x3555, IeeeFormat::F16), 0.333251953125);
        assert_eq!(widen_to_f64(0x0001, IeeeFormat::F16), 2f64.powi(-24));
    }

    #[test]
    fn bf16_and_tf32_rounding_follow_their_modes() {
        // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even gives 1.0.
        assert_eq!(
            round_f64(1.0 + 2f64.powi(-8), IeeeFormat::BF16, Rounding::NearestEven),
            0x3f80
        );
        assert_eq!(
            round_f64(
                1.0 + 3.0 * 2f64.powi(-8),
                IeeeFormat::BF16,
                Rounding::NearestEven
            ),
            0x3f82
        );
        // tf32 bits here are the 19-bit format (8 exponent, 10 mantissa): 1.0 is 0x1fc00.
        assert_eq!(
            round_f64(
                1.0 + 2f64.powi(-11),
                IeeeFormat::TF32,
                Rounding::NearestAway
            ),
            0x1fc01
        );
        assert_eq!(
            round_f64(
                1.0 + 2f64.powi(-11),
                IeeeFormat::TF32,
                Rounding::NearestEven
            ),
            0x1fc00
        );
        assert_eq!(
            round_exact(true, 3, 0, IeeeFormat::F32, Rounding::NearestEven),
            (-3.0f32).to_bits() as u64
        );
        assert_eq!(
            round_exact(false, u64::MAX, 0, IeeeFormat::F32, Rounding::Zero),
            f32::from_bits(0x5f7f_ffff).to_bits() as u64
        );
    }
}
