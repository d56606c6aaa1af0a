//! Builder conveniences the generated kernels share, on top of the builder's raw layer:
//! storage-generic tensor access with 16-byte vectors (`tensor`), bf16 and f16 packing (`bf16`,
//! `half`) and float helpers (`math`). Every helper emits only instructions the CPU emulator
//! executes.

pub mod bf16;
pub mod half;
pub mod math;
pub mod tensor;

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::scalar::Scalar;

/// A fresh, not yet written register of type `T`, for the destination of a raw instruction.
pub fn fresh<T: Scalar>(b: &mut KernelBuilder) -> Value<T> {
    let reg = b.reg(T::TY);
    Value::from_reg(reg).expect("a register declared with `T::TY` wraps as `Value<T>`")
}
