//! The element types GEMM operands are stored as.

use kernel_runtime::{Bf16, DeviceElem, F16};
use kernels_gen::gemm::Dtype;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for kernel_runtime::Bf16 {}
    impl Sealed for kernel_runtime::F16 {}
}

/// A GEMM operand or output element: `f32`, [`Bf16`] or [`F16`]. Products accumulate in f32;
/// 16-bit outputs are rounded to nearest even on store.
///
/// ```
/// use kernels::gemm::GemmElement;
/// assert_eq!(<kernel_runtime::F16 as GemmElement>::from_f32(0.5).to_f32(), 0.5);
/// ```
pub trait GemmElement: DeviceElem + sealed::Sealed {
    const DTYPE: Dtype;
    /// Rounds an f32 to this type (nearest even).
    fn from_f32(v: f32) -> Self;
    /// Widens to f32 (exact).
    fn to_f32(self) -> f32;
}

impl GemmElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn from_f32(v: f32) -> f32 {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl GemmElement for Bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    fn from_f32(v: f32) -> Bf16 {
        Bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        Bf16::to_f32(self)
    }
}

impl GemmElement for F16 {
    const DTYPE: Dtype = Dtype::F16;
    fn from_f32(v: f32) -> F16 {
        F16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        F16::to_f32(self)
    }
}
