//! The element types collectives move.

use crate::element::{Bf16, Element};
use cudarc::nccl::sys::ncclDataType_t;

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL reduces natively: `f32` and [`Bf16`].
///
/// ```
/// fn takes<T: kernel_runtime::CollectiveElem>() {}
/// takes::<f32>();
/// takes::<kernel_runtime::Bf16>();
/// ```
pub trait CollectiveElem: Element + sealed::Sealed {
    /// NCCL's name for this type.
    #[doc(hidden)]
    fn nccl_type() -> ncclDataType_t;
}

impl sealed::Sealed for f32 {}
impl CollectiveElem for f32 {
    fn nccl_type() -> ncclDataType_t {
        ncclDataType_t::ncclFloat32
    }
}

impl sealed::Sealed for Bf16 {}
impl CollectiveElem for Bf16 {
    fn nccl_type() -> ncclDataType_t {
        ncclDataType_t::ncclBfloat16
    }
}
