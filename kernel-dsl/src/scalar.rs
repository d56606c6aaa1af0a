//! Marker types that carry a PTX type at compile time, so builder values are typed in Rust:
//! a `Value<F32>` cannot be stored through a `GlobalSlice<U32>` without a visible `cvt`.

use crate::types::ScalarType;

/// A Rust-level stand-in for a PTX type.
pub trait Scalar: Copy + 'static {
    const TY: ScalarType;
}

/// Types on which `add`, `sub`, `mul`, `min`, `max` are defined.
pub trait Arith: Scalar {}
/// Floating-point types (`fma`, approximations, IEEE division).
pub trait Float: Arith {}
/// Integer types (bit operations, shifts, `rem`).
pub trait Int: Arith {}
/// Types that fit one 32-bit register (warp shuffles move these).
pub trait Word32: Scalar {}

macro_rules! scalars {
    ($($name:ident => $ty:ident : $($tr:ident),*;)*) => {
        $(
            #[doc = concat!("The PTX `.", stringify!($ty), "` type.")]
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub struct $name;
            impl Scalar for $name {
                const TY: ScalarType = ScalarType::$ty;
            }
            $(impl $tr for $name {})*
        )*
    };
}

scalars! {
    Pred => Pred : ;
    B16 => B16 : ;
    B32 => B32 : Word32;
    B64 => B64 : ;
    U8 => U8 : ;
    U16 => U16 : Arith, Int;
    U32 => U32 : Arith, Int, Word32;
    U64 => U64 : Arith, Int;
    S16 => S16 : Arith, Int;
    S32 => S32 : Arith, Int, Word32;
    S64 => S64 : Arith, Int;
    F16 => F16 : ;
    Bf16 => Bf16 : ;
    F32 => F32 : Arith, Float, Word32;
    F64 => F64 : Arith, Float;
    F16x2 => F16x2 : Word32;
    Bf16x2 => Bf16x2 : Word32;
}
