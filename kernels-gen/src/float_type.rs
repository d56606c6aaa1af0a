//! The element types the op library computes on in f32, as a value: what kernel specs are
//! keyed by and entry names are spelled with.

use kernel_dsl::op::WgmmaInput;
use kernel_dsl::ScalarType;

/// How a tensor the op library computes on is stored: loads widen to f32, stores round to
/// nearest even.
///
/// ```
/// use kernels_gen::FloatType;
/// assert_eq!(FloatType::Bf16.suffix(), "bf16");
/// assert_eq!(FloatType::F16.bytes(), 2);
/// assert_eq!(FloatType::F32.per_vector(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatType {
    F32,
    Bf16,
    F16,
}

impl FloatType {
    /// The PTX type of one element.
    pub const fn scalar(self) -> ScalarType {
        match self {
            FloatType::F32 => ScalarType::F32,
            FloatType::Bf16 => ScalarType::Bf16,
            FloatType::F16 => ScalarType::F16,
        }
    }

    /// The `wgmma` input type of an operand held in this type (f32 is read as tf32).
    pub const fn wgmma_input(self) -> WgmmaInput {
        match self {
            FloatType::F32 => WgmmaInput::Tf32,
            FloatType::Bf16 => WgmmaInput::Bf16,
            FloatType::F16 => WgmmaInput::F16,
        }
    }

    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            FloatType::F32 => 4,
            FloatType::Bf16 | FloatType::F16 => 2,
        }
    }

    /// Elements per 16-byte vector access.
    pub const fn per_vector(self) -> u32 {
        crate::codegen::tensor::VECTOR_BYTES / self.bytes() as u32
    }

    /// The suffix entry names carry (`rms_norm_f32`).
    pub const fn suffix(self) -> &'static str {
        match self {
            FloatType::F32 => "f32",
            FloatType::Bf16 => "bf16",
            FloatType::F16 => "f16",
        }
    }
}
