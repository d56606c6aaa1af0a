//! IEEE f32/f64/f16/bf16 arithmetic with PTX's rounding modes, `.ftz` and `.sat`.
//!
//! Round-to-nearest f32 and f64 use the host's native IEEE operations. Directed modes compute
//! an exact (or sign-exact) error term in f64 and round once through [`round`](super::round),
//! so every mode is correctly rounded.

use super::round::{
    round_f64, round_f64_with_error, two_prod, two_sum, widen_to_f64, IeeeFormat, Rounding,
};

/// Bits of the canonical f32 NaN NVIDIA hardware returns from arithmetic.
pub const F32_CANONICAL_NAN: u32 = 0x7fff_ffff;
/// Bits of the canonical f64 NaN.
pub const F64_CANONICAL_NAN: u64 = 0x7fff_ffff_ffff_ffff;
/// Bits of the canonical f16 NaN.
pub const F16_CANONICAL_NAN: u16 = 0x7fff;
/// Bits of the canonical bf16 NaN.
pub const BF16_CANONICAL_NAN: u16 = 0x7fff;

/// The modifiers shared by floating-point arithmetic instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatMode {
    pub rounding: Rounding,
    pub ftz: bool,
    pub sat: bool,
}

impl FloatMode {
    /// `.rn`, no `.ftz`, no `.sat`: the native fast path.
    pub const NEAREST: FloatMode = FloatMode {
        rounding: Rounding::NearestEven,
        ftz: false,
        sat: false,
    };

    pub fn is_native(self) -> bool {
        self == FloatMode::NEAREST
    }
}

/// Flushes an f32 subnormal to a zero of the same sign.
#[inline]
pub fn flush_f32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// Clamps to [0, 1] with NaN mapped to +0, as `.sat` does.
#[inline]
pub fn saturate_f32(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// The bits an f32 arithmetic result is stored with (NaN canonicalised).
#[inline]
pub fn f32_result(x: f32) -> u32 {
    if x.is_nan() {
        F32_CANONICAL_NAN
    } else {
        x.to_bits()
    }
}

/// The bits an f64 arithmetic result is stored with (NaN canonicalised).
#[inline]
pub fn f64_result(x: f64) -> u64 {
    if x.is_nan() {
        F64_CANONICAL_NAN
    } else {
        x.to_bits()
    }
}

/// The elementary operations that take a rounding mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundedOp {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Sqrt,
    Rcp,
}

fn sign_only(err: f64) -> f64 {
    if err == 0.0 || err.is_nan() {
        0.0
    } else {
        f64::MIN_POSITIVE.copysign(err)
    }
}

/// `op(a, b, c)` computed in f64 as a value plus an error term, then rounded once into `fmt`.
/// Inputs are exact f64 widenings of values of at most f64 precision.
fn rounded_in(fmt: IeeeFormat, op: RoundedOp, a: f64, b: f64, c: f64, rounding: Rounding) -> u64 {
    let (value, err) = match op {
        RoundedOp::Add => two_sum(a, b),
        RoundedOp::Sub => two_sum(a, -b),
        RoundedOp::Mul => two_prod(a, b),
        RoundedOp::Fma => {
            let (p, pe) = two_prod(a, b);
            let (s, se) = two_sum(p, c);
            // pe + se is the exact residual for the narrow formats (their products are exact);
            // for f64 it has the right sign, which is what directed rounding needs.
            let (s2, e2) = two_sum(s, pe + se);
            (s2, e2)
        }
        RoundedOp::Div => {
            let q = a / b;
            if !q.is_finite() || q == 0.0 {
                (q, 0.0)
            } else {
                let r = (-q).mul_add(b, a);
                (q, sign_only(r / b))
            }
        }
        RoundedOp::Rcp => {
            let q = 1.0 / a;
            if !q.is_finite() || q == 0.0 {
                (q, 0.0)
            } else {
                let r = (-q).mul_add(a, 1.0);
                (q, sign_only(r / a))
            }
        }
        RoundedOp::Sqrt => {
            let s = a.sqrt();
            if !s.is_finite() || s == 0.0 {
                (s, 0.0)
            } else {
                let r = (-s).mul_add(s, a);
                (s, sign_only(r))
            }
        }
    };
    round_f64_with_error(value, err, fmt, rounding)
}

/// An f32 operation under `mode` (`b`, `c` ignored where the op takes fewer operands).
pub fn f32_op(op: RoundedOp, mode: FloatMode, a: f32, b: f32, c: f32) -> u32 {
    let (a, b, c) = if mode.ftz {
        (flush_f32(a), flush_f32(b), flush_f32(c))
    } else {
        (a, b, c)
    };
    let mut r = if mode.rounding == Rounding::NearestEven {
        match op {
            RoundedOp::Add => a + b,
            RoundedOp::Sub => a - b,
            RoundedOp::Mul => a * b,
            RoundedOp::Div => a / b,
            RoundedOp::Fma => a.mul_add(b, c),
            RoundedOp::Sqrt => a.sqrt(),
            RoundedOp::Rcp => 1.0 / a,
        }
    } else {
        f32::from_bits(rounded_in(
            IeeeFormat::F32,
            op,
            a as f64,
            b as f64,
            c as f64,
            mode.rounding,
        ) as u32)
    };
    if mode.ftz {
        r = flush_f32(r);
    }
    if mode.sat {
        r = saturate_f32(r);
    }
    f32_result(r)
}

/// An f64 operation under a rounding mode (f64 has no `.ftz`; `.sat` is honoured for fma/add).
pub fn f64_op(op: RoundedOp, mode: FloatMode, a: f64, b: f64, c: f64) -> u64 {
    let mut r = if mode.rounding == Rounding::NearestEven {
        match op {
            RoundedOp::Add => a + b,
            RoundedOp::Sub => a - b,
            RoundedOp::Mul => a * b,
            RoundedOp::Div => a / b,
            RoundedOp::Fma => a.mul_add(b, c),
            RoundedOp::Sqrt => a.sqrt(),
            RoundedOp::Rcp => 1.0 / a,
        }
    } else {
        f64::from_bits(rounded_in(IeeeFormat::F64, op, a, b, c, mode.rounding))
    };
    if mode.sat {
        r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
    }
    f64_result(r)
}

/// Which 16-bit float a half operation works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    F16,
    Bf16,
}

impl Half {
    pub fn format(self) -> IeeeFormat {
        match self {
            Half::F16 => IeeeFormat::F16,
            Half::Bf16 => IeeeFormat::BF16,
        }
    }
    /// Exact value of `bits` as f64.
    #[inline]
    pub fn to_f64(self, bits: u16) -> f64 {
        match self {
            Half::Bf16 => f32::from_bits((bits as u32) << 16) as f64,
            Half::F16 => widen_to_f64(bits as u64, IeeeFormat::F16),
        }
    }
    /// `x` rounded to this format.
    pub fn from_f64(self, x: f64, rounding: Rounding) -> u16 {
        round_f64(x, self.format(), rounding) as u16
    }
    fn is_subnormal(self, bits: u16) -> bool {
        let exp_mask = match self {
            Half::F16 => 0x7c00,
            Half::Bf16 => 0x7f80,
        };
        bits & exp_mask == 0 && bits & 0x7fff != 0
    }
    fn flush(self, bits: u16) -> u16 {
        if self.is_subnormal(bits) {
            bits & 0x8000
        } else {
            bits
        }
    }
    fn canonical_nan(self) -> u16 {
        match self {
            Half::F16 => F16_CANONICAL_NAN,
            Half::Bf16 => BF16_CANONICAL_NAN,
        }
    }
}

/// A 16-bit float operation under `mode`, on bit patterns.
pub fn half_op(kind: Half, op: RoundedOp, mode: FloatMode, a: u16, b: u16, c: u16) -> u16 {
    let (a, b, c) = if mode.ftz {
        (kind.flush(a), kind.flush(b), kind.flush(c))
    } else {
        (a, b, c)
    };
    let (x, y, z) = (kind.to_f64(a), kind.to_f64(b), kind.to_f64(c));
    let mut r = rounded_in(kind.format(), op, x, y, z, mode.rounding) as u16;
    if mode.ftz {
        r = kind.flush(r);
    }
    if mode.sat {
        let v = kind.to_f64(r);
        if v.is_nan() || v <= 0.0 {
            r = 0;
        } else if v > 1.0 {
            r = kind.from_f64(1.0, Rounding::NearestEven);
        }
    }
    if kind.to_f64(r).is_nan() {
        kind.canonical_nan()
    } else {
        r
    }
}

/// `min`/`max` of two 16-bit floats; with `propagate_nan` a NaN input gives NaN, otherwise the
/// other operand.
pub fn half_minmax(kind: Half, max: bool, propagate_nan: bool, a: u16, b: u16) -> u16 {
    let (x, y) = (kind.to_f64(a), kind.to_f64(b));
    if x.is_nan() || y.is_nan() {
        if propagate_nan || (x.is_nan() && y.is_nan()) {
            return kind.canonical_nan();
        }
        return if x.is_nan() { b } else { a };
    }
    let pick_a = if max {
        x > y || (x == y && b & 0x8000 != 0)
    } else {
        x < y || (x == y && a & 0x8000 != 0)
    };
    if pick_a {
        a
    } else {
        b
    }
}

/// f32 `min`/`max`: a NaN operand is ignored unless both are NaN (or `.NaN` is given); -0 is
/// smaller than +0.
#[inline]
pub fn f32_minmax(max: bool, propagate_nan: bool, a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        if propagate_nan || (a.is_nan() && b.is_nan()) {
            return F32_CANONICAL_NAN;
        }
        return if a.is_nan() { b.to_bits() } else { a.to_bits() };
    }
    let pick_a = if max {
        a > b || (a == b && b.is_sign_negative())
    } else {
        a < b || (a == b && a.is_sign_negative())
    };
    if pick_a {
        a.to_bits()
    } else {
        b.to_bits()
    }
}

/// f64 `min`/`max` with the same rules as [`f32_minmax`].
#[inline]
pub fn f64_minmax(max: bool, a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        if a.is_nan() && b.is_nan() {
            return F64_CANONICAL_NAN;
        }
        return if a.is_nan() { b.to_bits() } else { a.to_bits() };
    }
    let pick_a = if max {
        a > b || (a == b && b.is_sign_negative())
    } else {
        a < b || (a == b && a.is_sign_negative())
    };
    if pick_a {
        a.to_bits()
    } else {
        b.to_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(rounding: Rounding) -> FloatMode {
        FloatMode {
            rounding,
            ftz: false,
            sat: false,
        }
    }

    #[test]
    fn f32_add_directed_modes_round_a_tiny_addend_in_its_direction() {
        let one = 1.0f32;
        let tiny = 1.0e-20f32;
        assert_eq!(
            f32_op(RoundedOp::Add, FloatMode::NEAREST, one, tiny, 0.0),
            one.to_bits()
        );
        assert_eq!(
            f32_op(RoundedOp::Add, mode(Rounding::Up), one, tiny, 0.0),
            one.to_bits() + 1
        );
        assert_eq!(
            f32_op(RoundedOp::Add, mode(Rounding::Down), one, -tiny, 0.0),
            0x3f7f_ffff
        );
        assert_eq!(
            f32_op(RoundedOp::Add, mode(Rounding::Zero), one, -tiny, 0.0),
            0x3f7f_ffff
        );
        assert_eq!(
            f32_op(RoundedOp::Add, mode(Rounding::Zero), one, tiny, 0.0),
            one.to_bits()
        );
    }

    #[test]
    fn f32_div_rz_truncates_one_third() {
        let rn = f32_op(RoundedOp::Div, FloatMode::NEAREST, 1.0, 3.0, 0.0);
        let rz = f32_op(RoundedOp::Div, mode(Rounding::Zero), 1.0, 3.0, 0.0);
        let rp = f32_op(RoundedOp::Div, mode(Rounding::Up), 1.0, 3.0, 0.0);
        assert_eq!(rn, (1.0f32 / 3.0).to_bits());
        // 1/3 = 0x3eaaaaab rounded to nearest (the tail 0xaaa... rounds up).
        assert_eq!(rz, 0x3eaa_aaaa);
        assert_eq!(rp, 0x3eaa_aaab);
    }

    #[test]
    fn f32_sqrt_directed_modes_bracket_sqrt_two() {
        let rm = f32_op(RoundedOp::Sqrt, mode(Rounding::Down), 2.0, 0.0, 0.0);
        let rp = f32_op(RoundedOp::Sqrt, mode(Rounding::Up), 2.0, 0.0, 0.0);
        assert_eq!(rp, rm + 1);
        assert!((f32::from_bits(rm) as f64) < 2f64.sqrt());
        assert!((f32::from_bits(rp) as f64) > 2f64.sqrt());
    }

    #[test]
    fn ftz_flushes_inputs_and_outputs_and_sat_clamps() {
        let sub = f32::from_bits(0x0000_0100);
        let ftz = FloatMode {
            ftz: true,
            ..FloatMode::NEAREST
        };
        assert_eq!(f32_op(RoundedOp::Add, ftz, sub, sub, 0.0), 0);
        assert_eq!(
            f32_op(RoundedOp::Add, FloatMode::NEAREST, sub, sub, 0.0),
            0x200
        );
        let sat = FloatMode {
            sat: true,
            ..FloatMode::NEAREST
        };
        assert_eq!(f32_op(RoundedOp::Mul, sat, 3.0, 2.0, 0.0), 1.0f32.to_bits());
        assert_eq!(f32_op(RoundedOp::Mul, sat, -3.0, 2.0, 0.0), 0);
        assert_eq!(f32_op(RoundedOp::Add, sat, f32::NAN, 2.0, 0.0), 0);
        assert_eq!(
            f32_op(
                RoundedOp::Add,
                FloatMode::NEAREST,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.0
            ),
            F32_CANONICAL_NAN
        );
    }

    #[test]
    fn f64_fma_directed_rounding_sees_the_product_tail() {
        let a = 1.0 + 2f64.powi(-30);
        // a*a = 1 + 2^-29 + 2^-60: the tail is below f64 precision.
        let up = f64_op(RoundedOp::Fma, mode(Rounding::Up), a, a, 0.0);
        let down = f64_op(RoundedOp::Fma, mode(Rounding::Down), a, a, 0.0);
        assert_eq!(up, down + 1);
        assert_eq!(f64::from_bits(down), 1.0 + 2f64.powi(-29));
    }

    #[test]
    fn half_arithmetic_rounds_in_the_half_format() {
        let one = Half::F16.from_f64(1.0, Rounding::NearestEven);
        let eps = Half::F16.from_f64(2f64.powi(-11), Rounding::NearestEven);
        // 1 + 2^-11 ties to 1.0 in f16; rounding up gives 1 + 2^-10.
        assert_eq!(
            half_op(Half::F16, RoundedOp::Add, FloatMode::NEAREST, one, eps, 0),
            0x3c00
        );
        assert_eq!(
            half_op(Half::F16, RoundedOp::Add, mode(Rounding::Up), one, eps, 0),
            0x3c01
        );
        let two = Half::Bf16.from_f64(2.0, Rounding::NearestEven);
        let three = Half::Bf16.from_f64(3.0, Rounding::NearestEven);
        let r = half_op(
            Half::Bf16,
            RoundedOp::Fma,
            FloatMode::NEAREST,
            two,
            three,
            two,
        );
        assert_eq!(Half::Bf16.to_f64(r), 8.0);
    }

    #[test]
    fn minmax_ignores_a_single_nan_and_orders_signed_zeros() {
        assert_eq!(f32_minmax(false, false, f32::NAN, 2.0), 2.0f32.to_bits());
        assert_eq!(f32_minmax(false, true, f32::NAN, 2.0), F32_CANONICAL_NAN);
        assert_eq!(f32_minmax(false, false, 0.0, -0.0), (-0.0f32).to_bits());
        assert_eq!(f32_minmax(true, false, -0.0, 0.0), 0.0f32.to_bits());
        assert_eq!(f64_minmax(true, 1.0, 3.0), 3.0f64.to_bits());
    }
}
