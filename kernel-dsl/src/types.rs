//! PTX value types and state spaces.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A PTX fundamental (or packed) type as it appears in instruction suffixes and declarations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ScalarType {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    Bf16,
    F32,
    F64,
    /// Two f16 values packed in 32 bits.
    F16x2,
    /// Two bf16 values packed in 32 bits.
    Bf16x2,
    /// TensorFloat-32, held in a 32-bit register; only `cvt` and `mma` take it.
    Tf32,
}

/// What kind of arithmetic a type takes part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    Pred,
    Bits,
    Unsigned,
    Signed,
    Float,
}

impl ScalarType {
    /// Every type, in declaration order.
    pub const ALL: [ScalarType; 20] = [
        ScalarType::Pred,
        ScalarType::B8,
        ScalarType::B16,
        ScalarType::B32,
        ScalarType::B64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::S8,
        ScalarType::S16,
        ScalarType::S32,
        ScalarType::S64,
        ScalarType::F16,
        ScalarType::Bf16,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16x2,
        ScalarType::Bf16x2,
        ScalarType::Tf32,
    ];

    /// The suffix PTX writes for this type, without the dot (`f32`, `bf16x2`).
    pub const fn ptx(self) -> &'static str {
        match self {
            ScalarType::Pred => "pred",
            ScalarType::B8 => "b8",
            ScalarType::B16 => "b16",
            ScalarType::B32 => "b32",
            ScalarType::B64 => "b64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::S8 => "s8",
            ScalarType::S16 => "s16",
            ScalarType::S32 => "s32",
            ScalarType::S64 => "s64",
            ScalarType::F16 => "f16",
            ScalarType::Bf16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F16x2 => "f16x2",
            ScalarType::Bf16x2 => "bf16x2",
            ScalarType::Tf32 => "tf32",
        }
    }

    /// Size in bits (a predicate counts as 1).
    pub const fn bits(self) -> u32 {
        match self {
            ScalarType::Pred => 1,
            ScalarType::B8 | ScalarType::U8 | ScalarType::S8 => 8,
            ScalarType::B16
            | ScalarType::U16
            | ScalarType::S16
            | ScalarType::F16
            | ScalarType::Bf16 => 16,
            ScalarType::B32
            | ScalarType::U32
            | ScalarType::S32
            | ScalarType::F32
            | ScalarType::F16x2
            | ScalarType::Bf16x2
            | ScalarType::Tf32 => 32,
            ScalarType::B64 | ScalarType::U64 | ScalarType::S64 | ScalarType::F64 => 64,
        }
    }

    /// Size in bytes in memory (a predicate is not addressable; it reports 1).
    pub const fn bytes(self) -> u32 {
        match self.bits() {
            1 => 1,
            b => b / 8,
        }
    }

    pub const fn class(self) -> TypeClass {
        match self {
            ScalarType::Pred => TypeClass::Pred,
            ScalarType::B8 | ScalarType::B16 | ScalarType::B32 | ScalarType::B64 => TypeClass::Bits,
            ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64 => {
                TypeClass::Unsigned
            }
            ScalarType::S8 | ScalarType::S16 | ScalarType::S32 | ScalarType::S64 => {
                TypeClass::Signed
            }
            ScalarType::F16
            | ScalarType::Bf16
            | ScalarType::F32
            | ScalarType::F64
            | ScalarType::F16x2
            | ScalarType::Bf16x2
            | ScalarType::Tf32 => TypeClass::Float,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self.class(), TypeClass::Float)
    }

    pub const fn is_integer(self) -> bool {
        matches!(self.class(), TypeClass::Unsigned | TypeClass::Signed)
    }

    /// The register class a value of this type lives in. 8-bit values live in 16-bit
    /// registers, as PTX requires for registers.
    pub const fn reg_class(self) -> RegClass {
        match self {
            ScalarType::Pred => RegClass::Pred,
            ScalarType::B8
            | ScalarType::U8
            | ScalarType::S8
            | ScalarType::B16
            | ScalarType::U16
            | ScalarType::S16 => RegClass::B16,
            ScalarType::F16 | ScalarType::Bf16 => RegClass::H16,
            ScalarType::B32
            | ScalarType::U32
            | ScalarType::S32
            | ScalarType::F16x2
            | ScalarType::Bf16x2
            | ScalarType::Tf32 => RegClass::B32,
            ScalarType::F32 => RegClass::F32,
            ScalarType::B64 | ScalarType::U64 | ScalarType::S64 => RegClass::B64,
            ScalarType::F64 => RegClass::F64,
        }
    }

    /// Whether a register declared with type `self` may be an operand where an instruction
    /// expects `expected`: same type, or same size where one side is an untyped `b` type, or
    /// same-size signed/unsigned integers (PTX allows both).
    pub fn fits(self, expected: ScalarType) -> bool {
        if self == expected {
            return true;
        }
        if self.bits() != expected.bits()
            || self == ScalarType::Pred
            || expected == ScalarType::Pred
        {
            return false;
        }
        let bitsish = |t: ScalarType| matches!(t.class(), TypeClass::Bits);
        if bitsish(self) || bitsish(expected) {
            return true;
        }
        self.is_integer() && expected.is_integer()
    }

    /// Parses a suffix such as `f32` (no dot).
    pub fn from_ptx(s: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.ptx() == s)
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ptx())
    }
}

/// The register file a virtual register is declared in; each class has its own name prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RegClass {
    Pred,
    B16,
    H16,
    B32,
    F32,
    B64,
    F64,
}

impl RegClass {
    pub const ALL: [RegClass; 7] = [
        RegClass::Pred,
        RegClass::B16,
        RegClass::H16,
        RegClass::B32,
        RegClass::F32,
        RegClass::B64,
        RegClass::F64,
    ];

    /// Prefix of the register names (`%r12`).
    pub const fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "p",
            RegClass::B16 => "rs",
            RegClass::H16 => "h",
            RegClass::B32 => "r",
            RegClass::F32 => "f",
            RegClass::B64 => "rd",
            RegClass::F64 => "fd",
        }
    }

    /// Type used in the `.reg` declaration.
    pub const fn decl_type(self) -> ScalarType {
        match self {
            RegClass::Pred => ScalarType::Pred,
            RegClass::B16 => ScalarType::B16,
            RegClass::H16 => ScalarType::B16,
            RegClass::B32 => ScalarType::B32,
            RegClass::F32 => ScalarType::F32,
            RegClass::B64 => ScalarType::B64,
            RegClass::F64 => ScalarType::F64,
        }
    }
}

/// Vector width of a load, store or register tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VecWidth {
    V2,
    V4,
}

impl VecWidth {
    pub const fn lanes(self) -> usize {
        match self {
            VecWidth::V2 => 2,
            VecWidth::V4 => 4,
        }
    }

    pub const fn ptx(self) -> &'static str {
        match self {
            VecWidth::V2 => "v2",
            VecWidth::V4 => "v4",
        }
    }
}

/// A PTX state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StateSpace {
    Param,
    Global,
    /// Shared memory; static or dynamic is a property of the declaration, not the space.
    Shared,
    Local,
    Const,
    /// The generic address space (no qualifier).
    Generic,
}

impl StateSpace {
    /// The qualifier PTX writes (`global`), or `None` for generic addressing.
    pub const fn ptx(self) -> Option<&'static str> {
        match self {
            StateSpace::Param => Some("param"),
            StateSpace::Global => Some("global"),
            StateSpace::Shared => Some("shared"),
            StateSpace::Local => Some("local"),
            StateSpace::Const => Some("const"),
            StateSpace::Generic => None,
        }
    }
}

impl fmt::Display for StateSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ptx().unwrap_or("generic"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_its_ptx_suffix() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_ptx(t.ptx()), Some(t));
        }
        assert_eq!(ScalarType::from_ptx("f128"), None);
    }

    #[test]
    fn sizes_match_the_ptx_isa() {
        assert_eq!(ScalarType::Bf16x2.bits(), 32);
        assert_eq!(ScalarType::S8.bytes(), 1);
        assert_eq!(ScalarType::F64.bytes(), 8);
        assert_eq!(ScalarType::U8.reg_class(), RegClass::B16);
    }

    #[test]
    fn operand_fitting_allows_bit_types_and_same_size_integers_only() {
        assert!(ScalarType::U32.fits(ScalarType::B32));
        assert!(ScalarType::S32.fits(ScalarType::U32));
        assert!(ScalarType::F32.fits(ScalarType::B32));
        assert!(!ScalarType::F32.fits(ScalarType::U32));
        assert!(!ScalarType::U64.fits(ScalarType::U32));
        assert!(!ScalarType::Pred.fits(ScalarType::B8));
    }
}
