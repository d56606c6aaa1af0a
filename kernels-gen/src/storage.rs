//! The storage types the ops specialize on. Arithmetic is in f32 for both.

use kernel_dsl::ScalarType;

/// How tensors are stored in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    F32,
    Bf16,
}

impl Storage {
    pub const fn scalar(self) -> ScalarType {
        match self {
            Storage::F32 => ScalarType::F32,
            Storage::Bf16 => ScalarType::Bf16,
        }
    }

    pub const fn bytes(self) -> usize {
        match self {
            Storage::F32 => 4,
            Storage::Bf16 => 2,
        }
    }

    /// Suffix used in entry names (`rms_norm_f32`).
    pub const fn suffix(self) -> &'static str {
        match self {
            Storage::F32 => "f32",
            Storage::Bf16 => "bf16",
        }
    }
}
