//! Element types a device buffer can hold, and the 16-bit float newtypes.

use kernel_dsl::ScalarType;

/// An IEEE 754 half-precision value, stored as its bit pattern.
///
/// ```
/// use kernel_runtime::F16;
/// assert_eq!(F16::from_f32(1.5).to_f32(), 1.5);
/// assert_eq!(F16::from_f32(1.0).to_bits(), 0x3c00);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(u16);

/// A bfloat16 value (the top half of an f32), stored as its bit pattern.
///
/// ```
/// use kernel_runtime::Bf16;
/// assert_eq!(Bf16::from_f32(-2.0).to_f32(), -2.0);
/// assert_eq!(Bf16::from_f32(1.0).to_bits(), 0x3f80);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(u16);

impl F16 {
    /// Wraps a raw bit pattern.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::F16::from_bits(0xc000).to_f32(), -2.0);
    /// ```
    pub const fn from_bits(bits: u16) -> F16 {
        F16(bits)
    }

    /// The raw bit pattern.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::F16::from_f32(0.0).to_bits(), 0);
    /// ```
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// Rounds an f32 to the nearest half (ties to even); overflow becomes infinity.
    ///
    /// ```
    /// use kernel_runtime::F16;
    /// assert_eq!(F16::from_f32(65520.0).to_f32(), f32::INFINITY);
    /// ```
    pub fn from_f32(x: f32) -> F16 {
        F16(f32_to_f16_bits(x))
    }

    /// Widens to f32 exactly.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::F16::from_bits(0x3555).to_f32(), 0.33325195);
    /// ```
    pub fn to_f32(self) -> f32 {
        f16_bits_to_f32(self.0)
    }
}

impl Bf16 {
    /// Wraps a raw bit pattern.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::Bf16::from_bits(0x4000).to_f32(), 2.0);
    /// ```
    pub const fn from_bits(bits: u16) -> Bf16 {
        Bf16(bits)
    }

    /// The raw bit pattern.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::Bf16::from_f32(0.0).to_bits(), 0);
    /// ```
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// Rounds an f32 to the nearest bf16 (ties to even); NaN stays NaN.
    ///
    /// ```
    /// assert!(kernel_runtime::Bf16::from_f32(f32::NAN).to_f32().is_nan());
    /// ```
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) as u16) | 0x0040);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }

    /// Widens to f32 exactly.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::Bf16::from_bits(0x3f80).to_f32(), 1.0);
    /// ```
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24, exactly representable in f32.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal half: shift the full mantissa (with its implicit bit) into place.
        let full = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = full >> shift;
        let rem = full & ((1 << shift) - 1);
        let midpoint = 1 << (shift - 1);
        let round_up = rem > midpoint || (rem == midpoint && half & 1 == 1);
        return sign | (half + round_up as u32) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    let round_up = rem > 0x1000 || (rem == 0x1000 && half & 1 == 1);
    // A carry out of the mantissa correctly bumps the exponent (and saturates to infinity).
    sign | (half + round_up as u32) as u16
}

mod sealed {
    pub trait Sealed {}
}

/// A type a [`Buffer`](crate::Buffer) can hold: plain old data with a PTX element type. It is
/// also the bound of a `#[kernel]`'s element type parameters (`T: Element`), so an instance's
/// types are exactly those a launcher's buffers can hold. Sealed: the set is fixed so that
/// every buffer's element type has a PTX spelling.
///
/// ```
/// use kernel_runtime::Element;
/// use kernel_dsl::ScalarType;
/// assert_eq!(<f32 as Element>::SCALAR, ScalarType::F32);
/// ```
pub trait Element:
    sealed::Sealed + Copy + Default + Send + Sync + 'static + cudarc::driver::DeviceRepr
{
    /// The PTX type of one element.
    const SCALAR: ScalarType;
    /// This value as a kernel scalar argument.
    fn to_scalar(self) -> crate::ScalarValue;
}

macro_rules! elements {
    ($($t:ty => $scalar:ident, $variant:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const SCALAR: ScalarType = ScalarType::$scalar;
            fn to_scalar(self) -> crate::ScalarValue {
                crate::ScalarValue::$variant(self)
            }
        }
    )*};
}

elements! {
    f32 => F32, F32;
    f64 => F64, F64;
    F16 => F16, F16;
    Bf16 => Bf16, Bf16;
    u8 => U8, U8;
    u16 => U16, U16;
    u32 => U32, U32;
    i32 => S32, I32;
    u64 => U64, U64;
    i64 => S64, I64;
}

// SAFETY: both are `repr(transparent)` over u16, so every bit pattern is a valid value and the
// device sees exactly the 16-bit encoding PTX's f16/bf16 types expect.
unsafe impl cudarc::driver::DeviceRepr for F16 {}
// SAFETY: as above.
unsafe impl cudarc::driver::DeviceRepr for Bf16 {}

/// Reinterprets a slice of elements as its bytes (every `Element` is padding-free POD).
pub(crate) fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: `Element` is sealed to padding-free primitive types and u16 newtypes, so every
    // byte of the slice is initialised; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Reinterprets a mutable slice of elements as its bytes; any byte pattern is a valid element.
pub(crate) fn as_bytes_mut<T: Element>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; additionally every bit pattern is a valid value of each sealed
    // element type, so writing arbitrary bytes cannot create an invalid value.
    unsafe {
        std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_every_finite_half_through_f32() {
        for bits in 0u16..=0xffff {
            let h = F16::from_bits(bits);
            let f = h.to_f32();
            if f.is_nan() {
                assert!(F16::from_f32(f).to_f32().is_nan());
                continue;
            }
            assert_eq!(F16::from_f32(f).to_bits(), bits, "bits {bits:#06x} -> {f}");
        }
    }

    #[test]
    fn f16_rounds_halfway_cases_to_even() {
        // 1 + 2^-11 sits exactly between 1.0 and the next half; ties go to the even 1.0.
        assert_eq!(F16::from_f32(1.0 + f32::powi(2.0, -11)).to_bits(), 0x3c00);
        // 1 + 3*2^-11 ties between 0x3c01 and 0x3c02; even is 0x3c02.
        assert_eq!(
            F16::from_f32(1.0 + 3.0 * f32::powi(2.0, -11)).to_bits(),
            0x3c02
        );
        assert_eq!(F16::from_f32(f32::powi(2.0, -25)).to_bits(), 0);
        assert_eq!(F16::from_f32(f32::powi(2.0, -24)).to_bits(), 1);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(
            Bf16::from_f32(f32::from_bits(0x3f80_8000)).to_bits(),
            0x3f80
        );
        assert_eq!(
            Bf16::from_f32(f32::from_bits(0x3f81_8000)).to_bits(),
            0x3f82
        );
        assert_eq!(
            Bf16::from_f32(f32::from_bits(0x3f80_8001)).to_bits(),
            0x3f81
        );
    }
}
