//! The element types the op library computes on in f32.

use crate::FloatType;
use kernel_runtime::{Bf16, Element, F16};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for kernel_runtime::Bf16 {}
    impl Sealed for kernel_runtime::F16 {}
}

/// An element type the op library computes on: `f32`, [`Bf16`] or [`F16`]. Loads widen to
/// f32, arithmetic is in f32, and 16-bit results are rounded to nearest even on store. Ops
/// whose kernels exist for f32 and bf16 only return an [`Error`](crate::Error) for `F16`
/// before anything is launched.
///
/// ```
/// use kernels::{Float, FloatType};
/// use kernel_runtime::{Bf16, F16};
/// assert_eq!(<Bf16 as Float>::TYPE, FloatType::Bf16);
/// assert_eq!(<F16 as Float>::from_f32(0.5).to_f32(), 0.5);
/// assert_eq!(<f32 as Float>::from_f32(1.5).to_f32(), 1.5);
/// ```
pub trait Float: Element + sealed::Sealed {
    /// This type as a value, for kernel selection and entry names.
    const TYPE: FloatType;
    /// Rounds an f32 to this type (nearest even).
    fn from_f32(v: f32) -> Self;
    /// Widens to f32 (exact).
    fn to_f32(self) -> f32;
}

impl Float for f32 {
    const TYPE: FloatType = FloatType::F32;
    fn from_f32(v: f32) -> f32 {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Float for Bf16 {
    const TYPE: FloatType = FloatType::Bf16;
    fn from_f32(v: f32) -> Bf16 {
        Bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        Bf16::to_f32(self)
    }
}

impl Float for F16 {
    const TYPE: FloatType = FloatType::F16;
    fn from_f32(v: f32) -> F16 {
        F16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        F16::to_f32(self)
    }
}

/// Refuses `f16` for an op whose kernels are built for f32 and bf16 only, before anything is
/// launched or written.
pub(crate) fn f32_or_bf16<T: Float>(op: &'static str) -> Result<(), crate::Error> {
    if T::TYPE == FloatType::F16 {
        return Err(crate::Error::Unsupported {
            op,
            detail: "its kernels are built for f32 and bf16 only; cast f16 tensors to bf16 or \
                     f32 with `kernels::cast::cast` first"
                .into(),
        });
    }
    Ok(())
}
