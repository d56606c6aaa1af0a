//! The arithmetic the interpreter applies to register bits: integer operations at every width,
//! comparisons, fast-path f32/f64 operations and 16-bit float operations.

use crate::numerics::{
    bfe, bfi, bfind, f32_minmax, f32_result, f64_minmax, f64_result, flush_f32, half_minmax,
    half_op, lop3, prmt, round_f64_with_error, shf, two_sum, FloatMode, Half, IeeeFormat, Rounding,
};
use crate::program::{Cmp, CmpTy, FloatOp, HalfOp, IntOp, Testp, W};

/// One integer operation; `carry` is the thread's CC.CF flag.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn int_op(
    op: IntOp,
    w: W,
    signed: bool,
    a: u64,
    b: u64,
    c: u64,
    e: u64,
    carry: &mut bool,
) -> u64 {
    let m = w.mask();
    let bits = w.bits();
    let (ua, ub, uc) = (a & m, b & m, c & m);
    let (sa, sb) = (w.sext(a), w.sext(b));
    match op {
        IntOp::Add => a.wrapping_add(b) & m,
        IntOp::Sub => a.wrapping_sub(b) & m,
        IntOp::AddSat => {
            let (lo, hi) = signed_range(w);
            (sa as i128 + sb as i128).clamp(lo, hi) as u64 & m
        }
        IntOp::SubSat => {
            let (lo, hi) = signed_range(w);
            (sa as i128 - sb as i128).clamp(lo, hi) as u64 & m
        }
        IntOp::AddCc => {
            let s = ua as u128 + ub as u128;
            *carry = s > m as u128;
            s as u64 & m
        }
        IntOp::AddC { cc } => {
            let s = ua as u128 + ub as u128 + *carry as u128;
            if cc {
                *carry = s > m as u128;
            }
            s as u64 & m
        }
        IntOp::SubCc => {
            *carry = ub > ua;
            ua.wrapping_sub(ub) & m
        }
        IntOp::SubC { cc } => {
            let sub = ub as u128 + *carry as u128;
            let borrow = sub > ua as u128;
            if cc {
                *carry = borrow;
            }
            (ua as u128).wrapping_sub(sub) as u64 & m
        }
        IntOp::MulLo => a.wrapping_mul(b) & m,
        IntOp::MulHi => {
            if signed {
                ((sa as i128 * sb as i128) >> bits) as u64 & m
            } else {
                ((ua as u128 * ub as u128) >> bits) as u64 & m
            }
        }
        IntOp::MulWide => wide_mul(w, signed, a, b),
        IntOp::MadWide => wide_mul(w, signed, a, b).wrapping_add(c) & wide_mask(w),
        IntOp::MadLo => a.wrapping_mul(b).wrapping_add(c) & m,
        IntOp::MadHi => {
            let hi = if signed {
                ((sa as i128 * sb as i128) >> bits) as u64
            } else {
                ((ua as u128 * ub as u128) >> bits) as u64
            };
            hi.wrapping_add(c) & m
        }
        IntOp::MadLoCc {
            carry_in,
            carry_out,
        }
        | IntOp::MadHiCc {
            carry_in,
            carry_out,
        } => {
            let product = if signed {
                (sa as i128 * sb as i128) as u128
            } else {
                ua as u128 * ub as u128
            };
            let part = if matches!(op, IntOp::MadHiCc { .. }) {
                (product >> bits) as u64 & m
            } else {
                product as u64 & m
            };
            let s = part as u128 + uc as u128 + (carry_in && *carry) as u128;
            if carry_out {
                *carry = s > m as u128;
            }
            s as u64 & m
        }
        IntOp::Mul24Lo | IntOp::Mul24Hi | IntOp::Mad24Lo => {
            let (x, y) = if signed {
                (
                    ((a as u32) << 8) as i32 as i64 >> 8,
                    ((b as u32) << 8) as i32 as i64 >> 8,
                )
            } else {
                ((a & 0xff_ffff) as i64, (b & 0xff_ffff) as i64)
            };
            let p = x * y;
            match op {
                IntOp::Mul24Hi => (p >> 16) as u64 & m,
                IntOp::Mad24Lo => (p as u64).wrapping_add(c) & m,
                _ => p as u64 & m,
            }
        }
        IntOp::Div => {
            if ub == 0 {
                m
            } else if signed {
                sa.wrapping_div(sb) as u64 & m
            } else {
                ua / ub
            }
        }
        IntOp::Rem => {
            if ub == 0 {
                ua
            } else if signed {
                sa.wrapping_rem(sb) as u64 & m
            } else {
                ua % ub
            }
        }
        IntOp::Min => {
            if signed {
                sa.min(sb) as u64 & m
            } else {
                ua.min(ub)
            }
        }
        IntOp::Max => {
            if signed {
                sa.max(sb) as u64 & m
            } else {
                ua.max(ub)
            }
        }
        IntOp::Abs => sa.wrapping_abs() as u64 & m,
        IntOp::Neg => a.wrapping_neg() & m,
        IntOp::And => a & b & m,
        IntOp::Or => (a | b) & m,
        IntOp::Xor => (a ^ b) & m,
        IntOp::Not => !a & m,
        IntOp::Cnot | IntOp::PredNot => (ua == 0) as u64,
        IntOp::Shl => {
            let n = b & 0xffff_ffff;
            if n >= bits as u64 {
                0
            } else {
                (a << n) & m
            }
        }
        IntOp::Shr => {
            // Shift amounts past the width clamp: zero for unsigned, sign fill for signed.
            let n = b & 0xffff_ffff;
            if signed {
                (sa >> n.min(63)) as u64 & m
            } else if n >= bits as u64 {
                0
            } else {
                ua >> n
            }
        }
        IntOp::Popc => ua.count_ones() as u64,
        IntOp::Clz => (ua.leading_zeros() - (64 - bits)) as u64,
        IntOp::Brev => ua.reverse_bits() >> (64 - bits),
        IntOp::Bfe => bfe(ua, b as u32, c as u32, bits, signed),
        IntOp::Bfi => bfi(a, ub, c as u32, e as u32, bits) & m,
        IntOp::Bfind { shift_amount } => bfind(ua, bits, signed, shift_amount) as u64,
        IntOp::Prmt(mode) => prmt(mode, a as u32, b as u32, c as u32) as u64,
        IntOp::Lop3 => lop3(a as u32, b as u32, c as u32, e as u8) as u64,
        IntOp::Shf { left, clamp } => shf(left, clamp, a as u32, b as u32, c as u32) as u64,
        IntOp::Sad => {
            let diff = if signed {
                (sa - sb).unsigned_abs()
            } else {
                ua.abs_diff(ub)
            };
            diff.wrapping_add(c) & m
        }
        IntOp::Dp4a { a_signed, b_signed } => {
            let byte = |v: u64, i: u32, s: bool| -> i64 {
                let x = (v >> (8 * i)) as u8;
                if s {
                    x as i8 as i64
                } else {
                    x as i64
                }
            };
            let mut acc = c as u32 as i64;
            if a_signed || b_signed {
                acc = c as i32 as i64;
            }
            for i in 0..4 {
                acc += byte(a, i, a_signed) * byte(b, i, b_signed);
            }
            acc as u64 & 0xffff_ffff
        }
    }
}

fn signed_range(w: W) -> (i128, i128) {
    let bits = w.bits();
    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
}

fn wide_mask(w: W) -> u64 {
    match w {
        W::B8 => 0xffff,
        W::B16 => 0xffff_ffff,
        _ => u64::MAX,
    }
}

#[inline]
fn wide_mul(w: W, signed: bool, a: u64, b: u64) -> u64 {
    if signed {
        (w.sext(a).wrapping_mul(w.sext(b))) as u64 & wide_mask(w)
    } else {
        ((a & w.mask()).wrapping_mul(b & w.mask())) & wide_mask(w)
    }
}

/// `cmp(a, b)` on values of type `ty`.
#[inline]
pub(crate) fn compare(cmp: Cmp, ty: CmpTy, a: u64, b: u64) -> bool {
    match ty {
        CmpTy::Unsigned(w) => ordered(cmp, &(a & w.mask()), &(b & w.mask())),
        CmpTy::Signed(w) => ordered(cmp, &w.sext(a), &w.sext(b)),
        CmpTy::F32 => float_cmp(
            cmp,
            f32::from_bits(a as u32) as f64,
            f32::from_bits(b as u32) as f64,
        ),
        CmpTy::F32Ftz => float_cmp(
            cmp,
            flush_f32(f32::from_bits(a as u32)) as f64,
            flush_f32(f32::from_bits(b as u32)) as f64,
        ),
        CmpTy::F64 => float_cmp(cmp, f64::from_bits(a), f64::from_bits(b)),
        CmpTy::Half(h) => float_cmp(cmp, h.to_f64(a as u16), h.to_f64(b as u16)),
    }
}

#[inline]
fn ordered<T: PartialOrd>(cmp: Cmp, a: &T, b: &T) -> bool {
    match cmp {
        Cmp::Eq | Cmp::Equ => a == b,
        Cmp::Ne | Cmp::Neu => a != b,
        Cmp::Lt | Cmp::Ltu => a < b,
        Cmp::Le | Cmp::Leu => a <= b,
        Cmp::Gt | Cmp::Gtu => a > b,
        Cmp::Ge | Cmp::Geu => a >= b,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[inline]
fn float_cmp(cmp: Cmp, a: f64, b: f64) -> bool {
    let unordered = a.is_nan() || b.is_nan();
    match cmp {
        Cmp::Num => !unordered,
        Cmp::Nan => unordered,
        Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu => {
            unordered || ordered(cmp, &a, &b)
        }
        // `ne` is false on NaN (ordered), unlike Rust's `!=`.
        _ => !unordered && ordered(cmp, &a, &b),
    }
}

/// Round-to-nearest f32 fma without relying on a hardware FMA: the product of two f32 is exact
/// in f64, so only a sum that lands exactly on an f32 rounding midpoint needs the error term.
#[inline]
pub(crate) fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let s = p + c as f64;
    if !s.is_finite() || s.abs() < f32::MIN_POSITIVE as f64 {
        return a.mul_add(b, c);
    }
    if s.to_bits() & 0x1fff_ffff == 0x1000_0000 {
        let (s2, e) = two_sum(p, c as f64);
        if e != 0.0 {
            return f32::from_bits(round_f64_with_error(
                s2,
                e,
                IeeeFormat::F32,
                Rounding::NearestEven,
            ) as u32);
        }
    }
    s as f32
}

/// A fast-path f32 operation (round to nearest, no `.ftz`, no `.sat`).
#[inline]
pub(crate) fn f32_fast(op: FloatOp, a: u64, b: u64, c: u64) -> u64 {
    let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
    (match op {
        FloatOp::Add => f32_result(x + y),
        FloatOp::Sub => f32_result(x - y),
        FloatOp::Mul => f32_result(x * y),
        FloatOp::Div => f32_result(x / y),
        FloatOp::Fma => f32_result(fma_f32(x, y, f32::from_bits(c as u32))),
        FloatOp::Min => f32_minmax(false, false, x, y),
        FloatOp::Max => f32_minmax(true, false, x, y),
        FloatOp::MinNaN => f32_minmax(false, true, x, y),
        FloatOp::MaxNaN => f32_minmax(true, true, x, y),
        FloatOp::Abs => a as u32 & 0x7fff_ffff,
        FloatOp::Neg => a as u32 ^ 0x8000_0000,
        FloatOp::Copysign => (b as u32 & 0x7fff_ffff) | (a as u32 & 0x8000_0000),
    }) as u64
}

/// `abs/neg/min/max.ftz.f32`.
pub(crate) fn f32_ftz(op: FloatOp, a: u64, b: u64) -> u64 {
    let (x, y) = (
        flush_f32(f32::from_bits(a as u32)),
        flush_f32(f32::from_bits(b as u32)),
    );
    f32_fast(op, x.to_bits() as u64, y.to_bits() as u64, 0)
}

/// A fast-path f64 operation.
#[inline]
pub(crate) fn f64_fast(op: FloatOp, a: u64, b: u64, c: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    match op {
        FloatOp::Add => f64_result(x + y),
        FloatOp::Sub => f64_result(x - y),
        FloatOp::Mul => f64_result(x * y),
        FloatOp::Div => f64_result(x / y),
        FloatOp::Fma => f64_result(x.mul_add(y, f64::from_bits(c))),
        FloatOp::Min | FloatOp::MinNaN => f64_minmax(false, x, y),
        FloatOp::Max | FloatOp::MaxNaN => f64_minmax(true, x, y),
        FloatOp::Abs => a & 0x7fff_ffff_ffff_ffff,
        FloatOp::Neg => a ^ 0x8000_0000_0000_0000,
        FloatOp::Copysign => (b & 0x7fff_ffff_ffff_ffff) | (a & 0x8000_0000_0000_0000),
    }
}

fn half_one(kind: Half, op: HalfOp, mode: FloatMode, a: u16, b: u16, c: u16) -> u16 {
    match op {
        HalfOp::Rounded(r) => half_op(kind, r, mode, a, b, c),
        HalfOp::Min { nan } => half_minmax(kind, false, nan, a, b),
        HalfOp::Max { nan } => half_minmax(kind, true, nan, a, b),
        HalfOp::Neg => a ^ 0x8000,
        HalfOp::Abs => a & 0x7fff,
        HalfOp::Ex2 | HalfOp::Tanh => {
            let v = kind.to_f64(a);
            let r = if op == HalfOp::Ex2 {
                v.exp2()
            } else {
                v.tanh()
            };
            let r = kind.from_f64(r, Rounding::NearestEven);
            if mode.ftz
                && kind.to_f64(r).abs()
                    < if kind == Half::F16 {
                        6.103515625e-5
                    } else {
                        f32::MIN_POSITIVE as f64
                    }
            {
                r & 0x8000
            } else {
                r
            }
        }
    }
}

/// A 16-bit float operation, on one value or on both halves of a packed pair.
pub(crate) fn half_exec(
    kind: Half,
    pairs: bool,
    op: HalfOp,
    mode: FloatMode,
    a: u64,
    b: u64,
    c: u64,
) -> u64 {
    let lo = half_one(kind, op, mode, a as u16, b as u16, c as u16) as u64;
    if !pairs {
        return lo;
    }
    let hi = half_one(
        kind,
        op,
        mode,
        (a >> 16) as u16,
        (b >> 16) as u16,
        (c >> 16) as u16,
    ) as u64;
    (hi << 16) | lo
}

pub(crate) fn testp(test: Testp, is_f64: bool, a: u64) -> bool {
    let v = if is_f64 {
        f64::from_bits(a)
    } else {
        f32::from_bits(a as u32) as f64
    };
    let subnormal = if is_f64 {
        v.is_subnormal()
    } else {
        f32::from_bits(a as u32).is_subnormal()
    };
    match test {
        Testp::Finite => v.is_finite(),
        Testp::Infinite => v.is_infinite(),
        Testp::Number => !v.is_nan(),
        Testp::NotANumber => v.is_nan(),
        Testp::Normal => v.is_finite() && v != 0.0 && !subnormal,
        Testp::Subnormal => subnormal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fma_f32_matches_a_correctly_rounded_fma_on_random_inputs() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f32::from_bits(((x >> 32) as u32 & 0x3fff_ffff) | 0x3000_0000)
                * if x & 1 == 1 { -1.0 } else { 1.0 }
        };
        for _ in 0..100_000 {
            let (a, b, c) = (next(), next(), next());
            assert_eq!(
                fma_f32(a, b, c).to_bits(),
                a.mul_add(b, c).to_bits(),
                "{a} {b} {c}"
            );
        }
    }

    #[test]
    fn carries_chain_through_add_cc_and_addc() {
        let mut carry = false;
        let lo = int_op(
            IntOp::AddCc,
            W::B32,
            false,
            0xffff_ffff,
            1,
            0,
            0,
            &mut carry,
        );
        assert!(carry);
        let hi = int_op(
            IntOp::AddC { cc: false },
            W::B32,
            false,
            1,
            2,
            0,
            0,
            &mut carry,
        );
        assert_eq!((lo, hi), (0, 4));
    }

    #[test]
    fn shifts_clamp_and_signed_shift_fills_with_the_sign() {
        let mut c = false;
        assert_eq!(int_op(IntOp::Shl, W::B32, false, 1, 40, 0, 0, &mut c), 0);
        assert_eq!(
            int_op(IntOp::Shr, W::B32, true, 0x8000_0000, 40, 0, 0, &mut c),
            0xffff_ffff
        );
        assert_eq!(
            int_op(IntOp::Shr, W::B32, false, 0x8000_0000, 31, 0, 0, &mut c),
            1
        );
        assert_eq!(
            int_op(
                IntOp::MulWide,
                W::B32,
                true,
                (-3i32) as u32 as u64,
                5,
                0,
                0,
                &mut c
            ),
            (-15i64) as u64
        );
        assert_eq!(
            int_op(IntOp::MulHi, W::B32, false, 0x8000_0000, 4, 0, 0, &mut c),
            2
        );
        assert_eq!(int_op(IntOp::Clz, W::B32, false, 1, 0, 0, 0, &mut c), 31);
        assert_eq!(
            int_op(IntOp::Brev, W::B32, false, 1, 0, 0, 0, &mut c),
            0x8000_0000
        );
        assert_eq!(
            int_op(
                IntOp::Div,
                W::B32,
                true,
                (-7i32) as u32 as u64,
                2,
                0,
                0,
                &mut c
            ),
            (-3i32) as u32 as u64
        );
        assert_eq!(
            int_op(
                IntOp::Rem,
                W::B32,
                true,
                (-7i32) as u32 as u64,
                2,
                0,
                0,
                &mut c
            ),
            (-1i32) as u32 as u64
        );
    }

    #[test]
    fn float_comparisons_treat_nan_as_unordered() {
        let nan = f32::NAN.to_bits() as u64;
        let one = 1.0f32.to_bits() as u64;
        assert!(!compare(Cmp::Ne, CmpTy::F32, nan, one));
        assert!(compare(Cmp::Neu, CmpTy::F32, nan, one));
        assert!(compare(Cmp::Nan, CmpTy::F32, nan, one));
        let tiny = (-1.0e-40f32).to_bits() as u64;
        assert!(compare(Cmp::Lt, CmpTy::F32, tiny, 0));
        assert!(!compare(Cmp::Lt, CmpTy::F32Ftz, tiny, 0));
        assert!(compare(Cmp::Eq, CmpTy::F32Ftz, tiny, 0));
        assert!(compare(
            Cmp::Lt,
            CmpTy::Signed(W::B32),
            (-1i32) as u32 as u64,
            0
        ));
        assert!(!compare(
            Cmp::Lt,
            CmpTy::Unsigned(W::B32),
            (-1i32) as u32 as u64,
            0
        ));
    }
}
