//! `cvt` between every pair of PTX scalar types, with every rounding mode, `.ftz`, `.sat`,
//! `.relu` and `.satfinite`.

use super::round::{round_exact, round_f64, widen_to_f64, IeeeFormat, Rounding};

/// A PTX scalar type as `cvt` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CvtType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    Bf16,
    Tf32,
    F32,
    F64,
}

impl CvtType {
    pub fn is_float(self) -> bool {
        matches!(
            self,
            CvtType::F16 | CvtType::Bf16 | CvtType::Tf32 | CvtType::F32 | CvtType::F64
        )
    }
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            CvtType::S8 | CvtType::S16 | CvtType::S32 | CvtType::S64
        )
    }
    pub fn bits(self) -> u32 {
        match self {
            CvtType::U8 | CvtType::S8 => 8,
            CvtType::U16 | CvtType::S16 | CvtType::F16 | CvtType::Bf16 => 16,
            CvtType::U32 | CvtType::S32 | CvtType::F32 | CvtType::Tf32 => 32,
            CvtType::U64 | CvtType::S64 | CvtType::F64 => 64,
        }
    }
    fn format(self) -> Option<IeeeFormat> {
        match self {
            CvtType::F16 => Some(IeeeFormat::F16),
            CvtType::Bf16 => Some(IeeeFormat::BF16),
            CvtType::Tf32 | CvtType::F32 => Some(IeeeFormat::F32),
            CvtType::F64 => Some(IeeeFormat::F64),
            _ => None,
        }
    }
    /// Integer range as (min, max) in i128.
    fn int_range(self) -> (i128, i128) {
        let bits = self.bits();
        if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        }
    }
}

/// How `cvt` rounds: to a floating format (`.rn .rz .rm .rp .rna`) or to an integral value
/// (`.rni .rzi .rmi .rpi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CvtRounding {
    Float(Rounding),
    Integer(Rounding),
    /// No rounding modifier (exact or default conversions).
    Default,
}

/// The modifiers of one `cvt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CvtMode {
    pub rounding: CvtRounding,
    pub ftz: bool,
    pub sat: bool,
    pub relu: bool,
    pub satfinite: bool,
}

impl CvtMode {
    pub const PLAIN: CvtMode = CvtMode {
        rounding: CvtRounding::Default,
        ftz: false,
        sat: false,
        relu: false,
        satfinite: false,
    };
}

fn int_value(bits: u64, ty: CvtType) -> i128 {
    let n = ty.bits();
    let masked = if n == 64 {
        bits
    } else {
        bits & ((1u64 << n) - 1)
    };
    if ty.is_signed() && n < 128 {
        let shift = 64 - n;
        (((masked << shift) as i64) >> shift) as i128
    } else {
        masked as i128
    }
}

fn float_value(bits: u64, ty: CvtType, ftz: bool) -> f64 {
    let v = match ty {
        CvtType::F64 => f64::from_bits(bits),
        CvtType::F32 | CvtType::Tf32 => f32::from_bits(bits as u32) as f64,
        CvtType::Bf16 => f32::from_bits((bits as u32 & 0xffff) << 16) as f64,
        CvtType::F16 => widen_to_f64(bits & 0xffff, IeeeFormat::F16),
        _ => 0.0,
    };
    if ftz && ty == CvtType::F32 && (v as f32).is_subnormal() {
        0.0f64.copysign(v)
    } else {
        v
    }
}

fn round_integral(v: f64, mode: Rounding) -> f64 {
    match mode {
        Rounding::NearestEven => v.round_ties_even(),
        Rounding::NearestAway => v.round(),
        Rounding::Zero => v.trunc(),
        Rounding::Down => v.floor(),
        Rounding::Up => v.ceil(),
    }
}

fn mask_to(bits: u64, n: u32) -> u64 {
    if n == 64 {
        bits
    } else {
        bits & ((1u64 << n) - 1)
    }
}

/// Converts `bits` of type `from` into bits of type `to` (zero-extended to 64 bits, except that
/// signed integer results are sign-extended so a narrower destination reads them correctly).
pub fn convert(bits: u64, from: CvtType, to: CvtType, mode: CvtMode) -> u64 {
    match (from.is_float(), to.is_float()) {
        (false, false) => {
            let v = int_value(bits, from);
            let v = if mode.sat {
                let (lo, hi) = to.int_range();
                v.clamp(lo, hi)
            } else {
                v
            };
            let out = v as i64 as u64;
            if to.is_signed() {
                let shift = 64 - to.bits();
                (((out << shift) as i64) >> shift) as u64
            } else {
                mask_to(out, to.bits())
            }
        }
        (false, true) => {
            let v = int_value(bits, from);
            let rounding = match mode.rounding {
                CvtRounding::Float(r) => r,
                _ => Rounding::NearestEven,
            };
            let fmt = to.format().unwrap_or(IeeeFormat::F32);
            let mut out = round_exact(v < 0, v.unsigned_abs() as u64, 0, fmt, rounding);
            if mode.sat {
                out = saturate_bits(out, to);
            }
            out
        }
        (true, false) => {
            let v = float_value(bits, from, mode.ftz);
            if v.is_nan() {
                return 0;
            }
            let r = match mode.rounding {
                CvtRounding::Integer(r) | CvtRounding::Float(r) => round_integral(v, r),
                CvtRounding::Default => v.trunc(),
            };
            let (lo, hi) = to.int_range();
            let clamped = if r <= lo as f64 {
                lo
            } else if r >= hi as f64 {
                hi
            } else {
                r as i128
            };
            let out = clamped as i64 as u64;
            if to.is_signed() {
                let shift = 64 - to.bits();
                (((out << shift) as i64) >> shift) as u64
            } else {
                mask_to(out, to.bits())
            }
        }
        (true, true) => float_to_float(bits, from, to, mode),
    }
}

fn saturate_bits(bits: u64, ty: CvtType) -> u64 {
    let v = float_value(bits, ty, false);
    let fmt = ty.format().unwrap_or(IeeeFormat::F32);
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= 1.0 {
        round_f64(1.0, fmt, Rounding::NearestEven)
    } else {
        bits
    }
}

fn float_to_float(bits: u64, from: CvtType, to: CvtType, mode: CvtMode) -> u64 {
    let mut v = float_value(bits, from, mode.ftz);
    if let CvtRounding::Integer(r) = mode.rounding {
        v = round_integral(v, r);
    }
    if mode.relu && !v.is_nan() && v < 0.0 {
        v = 0.0;
    }
    let rounding = match mode.rounding {
        CvtRounding::Float(r) => r,
        _ => Rounding::NearestEven,
    };
    let out = if to == CvtType::Tf32 {
        // tf32 lives in a 32-bit register with the low 13 mantissa bits zero.
        if v.is_nan() {
            0x7fff_ffff
        } else {
            round_f64(v, IeeeFormat::TF32, rounding) << 13
        }
    } else {
        let fmt = to.format().unwrap_or(IeeeFormat::F32);
        let mut out = round_f64(v, fmt, rounding);
        if mode.relu && v.is_nan() {
            out = fmt.canonical_nan();
        }
        if mode.satfinite && !v.is_nan() {
            let inf = fmt.inf();
            if out & !(1u64 << (fmt.exp_bits + fmt.man_bits)) == inf {
                out = (out & !inf) | fmt.max_finite();
            }
        }
        if mode.ftz && to == CvtType::F32 && f32::from_bits(out as u32).is_subnormal() {
            out &= 0x8000_0000;
        }
        out
    };
    if mode.sat {
        saturate_bits(out, to)
    } else {
        out
    }
}

/// `cvt.rn{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b`: `a` goes to the upper half, `b` to
/// the lower half.
pub fn pack_half2_from_f32(a: f32, b: f32, to: CvtType, mode: CvtMode) -> u32 {
    let hi = convert(a.to_bits() as u64, CvtType::F32, to, mode) as u32 & 0xffff;
    let lo = convert(b.to_bits() as u64, CvtType::F32, to, mode) as u32 & 0xffff;
    (hi << 16) | lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(rounding: CvtRounding) -> CvtMode {
        CvtMode {
            rounding,
            ..CvtMode::PLAIN
        }
    }

    #[test]
    fn float_to_int_rounds_by_mode_and_saturates() {
        let x = (-2.5f32).to_bits() as u64;
        let rni = convert(
            x,
            CvtType::F32,
            CvtType::S32,
            with(CvtRounding::Integer(Rounding::NearestEven)),
        );
        let rzi = convert(
            x,
            CvtType::F32,
            CvtType::S32,
            with(CvtRounding::Integer(Rounding::Zero)),
        );
        let rmi = convert(
            x,
            CvtType::F32,
            CvtType::S32,
            with(CvtRounding::Integer(Rounding::Down)),
        );
        let rpi = convert(
            x,
            CvtType::F32,
            CvtType::S32,
            with(CvtRounding::Integer(Rounding::Up)),
        );
        assert_eq!(
            [rni as i32, rzi as i32, rmi as i32, rpi as i32],
            [-2, -2, -3, -2]
        );
        let big = 1e20f32.to_bits() as u64;
        assert_eq!(
            convert(
                big,
                CvtType::F32,
                CvtType::U8,
                with(CvtRounding::Integer(Rounding::Zero))
            ),
            255
        );
        assert_eq!(
            convert(
                (-1.0f32).to_bits() as u64,
                CvtType::F32,
                CvtType::U32,
                CvtMode::PLAIN
            ),
            0
        );
        assert_eq!(
            convert(
                f32::NAN.to_bits() as u64,
                CvtType::F32,
                CvtType::S32,
                CvtMode::PLAIN
            ),
            0
        );
    }

    #[test]
    fn int_to_float_honours_directed_rounding() {
        let v = (1u64 << 24) + 1;
        let rn = convert(
            v,
            CvtType::U32,
            CvtType::F32,
            with(CvtRounding::Float(Rounding::NearestEven)),
        );
        let rp = convert(
            v,
            CvtType::U32,
            CvtType::F32,
            with(CvtRounding::Float(Rounding::Up)),
        );
        assert_eq!(f32::from_bits(rn as u32), 16777216.0);
        assert_eq!(f32::from_bits(rp as u32), 16777218.0);
        let neg = convert((-3i64) as u64, CvtType::S64, CvtType::F64, CvtMode::PLAIN);
        assert_eq!(f64::from_bits(neg), -3.0);
    }

    #[test]
    fn f32_to_bf16_and_f16_in_every_mode() {
        let x = 1.0f32 + 2f32.powi(-9); // a quarter of a bf16 ulp above 1.0
        let b = x.to_bits() as u64;
        let m = |r| convert(b, CvtType::F32, CvtType::Bf16, with(CvtRounding::Float(r)));
        assert_eq!(m(Rounding::NearestEven), 0x3f80);
        assert_eq!(m(Rounding::Zero), 0x3f80);
        assert_eq!(m(Rounding::Down), 0x3f80);
        assert_eq!(m(Rounding::Up), 0x3f81);
        let h = convert(
            0.1f32.to_bits() as u64,
            CvtType::F32,
            CvtType::F16,
            with(CvtRounding::Float(Rounding::NearestEven)),
        );
        assert_eq!(h, 0x2e66);
        let back = convert(0x2e66, CvtType::F16, CvtType::F32, CvtMode::PLAIN);
        assert_eq!(f32::from_bits(back as u32) as f64, 0.0999755859375f64);
    }

    #[test]
    fn packed_bf16x2_puts_the_first_operand_high() {
        let mode = with(CvtRounding::Float(Rounding::NearestEven));
        assert_eq!(
            pack_half2_from_f32(1.0, -2.0, CvtType::Bf16, mode),
            0x3f80_c000
        );
        let relu = CvtMode { relu: true, ..mode };
        assert_eq!(
            pack_half2_from_f32(1.0, -2.0, CvtType::Bf16, relu),
            0x3f80_0000
        );
    }

    #[test]
    fn satfinite_and_sat_clamp() {
        let mode = CvtMode {
            satfinite: true,
            ..with(CvtRounding::Float(Rounding::NearestEven))
        };
        assert_eq!(
            convert(1e6f32.to_bits() as u64, CvtType::F32, CvtType::F16, mode),
            0x7bff
        );
        let sat = CvtMode {
            sat: true,
            ..CvtMode::PLAIN
        };
        assert_eq!(
            convert(2.0f64.to_bits(), CvtType::F64, CvtType::F32, sat),
            1.0f32.to_bits() as u64
        );
        assert_eq!(convert(300, CvtType::S32, CvtType::U8, sat), 255);
        assert_eq!(
            convert(-300i64 as u64, CvtType::S32, CvtType::S8, sat) as i8,
            -128
        );
    }

    #[test]
    fn integer_rounding_float_to_float_and_tf32() {
        let r = convert(
            2.5f32.to_bits() as u64,
            CvtType::F32,
            CvtType::F32,
            with(CvtRounding::Integer(Rounding::NearestEven)),
        );
        assert_eq!(f32::from_bits(r as u32), 2.0);
        let t = convert(
            (1.0f32 + 2f32.powi(-11)).to_bits() as u64,
            CvtType::F32,
            CvtType::Tf32,
            with(CvtRounding::Float(Rounding::NearestAway)),
        );
        assert_eq!(t, (1.0f32 + 2f32.powi(-10)).to_bits() as u64);
        let w = convert(
            -5i64 as u64 & 0xff,
            CvtType::S8,
            CvtType::S32,
            CvtMode::PLAIN,
        );
        assert_eq!(w as i32, -5);
    }
}
