//! The storage element types ops are generic over.

use crate::Storage;
use kernel_runtime::{Bf16, DeviceElem};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for kernel_runtime::Bf16 {}
}

/// An element type tensors of the op library are stored as: `f32` or [`Bf16`]. Arithmetic is
/// in f32 for both; bf16 results are rounded to nearest even on store.
///
/// ```
/// use kernels::cast::Element;
/// use kernels::Storage;
/// assert_eq!(<kernel_runtime::Bf16 as Element>::STORAGE, Storage::Bf16);
/// assert_eq!(<f32 as Element>::from_f32(1.5).to_f32(), 1.5);
/// ```
pub trait Element: DeviceElem + sealed::Sealed {
    const STORAGE: Storage;
    /// Rounds an f32 to this type (nearest even).
    fn from_f32(v: f32) -> Self;
    /// Widens to f32 (exact).
    fn to_f32(self) -> f32;
}

impl Element for f32 {
    const STORAGE: Storage = Storage::F32;
    fn from_f32(v: f32) -> f32 {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Element for Bf16 {
    const STORAGE: Storage = Storage::Bf16;
    fn from_f32(v: f32) -> Bf16 {
        Bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        Bf16::to_f32(self)
    }
}
