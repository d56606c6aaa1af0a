//! A GEMM storage type as a value, for kernel specs and entry names.

use crate::codegen::tensor::Format;

/// A GEMM storage type, as a value (for kernel selection and entry names).
///
/// ```
/// use kernels_gen::gemm::Dtype;
/// assert_eq!(Dtype::Bf16.suffix(), "bf16");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    F32,
    Bf16,
    F16,
}

impl Dtype {
    pub const fn suffix(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }

    pub const fn bytes(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::F16 => 2,
        }
    }

    pub const fn format(self) -> Format {
        match self {
            Dtype::F32 => Format::F32,
            Dtype::Bf16 => Format::Bf16,
            Dtype::F16 => Format::F16,
        }
    }
}
