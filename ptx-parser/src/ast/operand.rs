//! Instruction operands: registers, immediates, addresses, vectors, symbols.

use crate::keyword::keyword_enum;
use std::fmt;

keyword_enum! {
    /// A component of a vector special register (`%tid.x`).
    pub enum Dim {
        X => "x",
        Y => "y",
        Z => "z",
    }
}

keyword_enum! {
    /// A special register without a component.
    pub enum SpecialScalar {
        Laneid => "laneid",
        Warpid => "warpid",
        Nwarpid => "nwarpid",
        Smid => "smid",
        Nsmid => "nsmid",
        Gridid => "gridid",
        Clock => "clock",
        ClockHi => "clock_hi",
        Clock64 => "clock64",
        Globaltimer => "globaltimer",
        GlobaltimerLo => "globaltimer_lo",
        GlobaltimerHi => "globaltimer_hi",
        LanemaskEq => "lanemask_eq",
        LanemaskLe => "lanemask_le",
        LanemaskLt => "lanemask_lt",
        LanemaskGe => "lanemask_ge",
        LanemaskGt => "lanemask_gt",
        DynamicSmemSize => "dynamic_smem_size",
        TotalSmemSize => "total_smem_size",
        AggrSmemSize => "aggr_smem_size",
        ClusterCtarank => "cluster_ctarank",
        ClusterNctarank => "cluster_nctarank",
        ClusterNclusterid => "cluster_nclusterid",
        IsExplicitCluster => "is_explicit_cluster",
    }
}

keyword_enum! {
    /// A special register that has `.x`, `.y` and `.z` components.
    pub enum SpecialVector {
        Tid => "tid",
        Ntid => "ntid",
        Ctaid => "ctaid",
        Nctaid => "nctaid",
        Clusterid => "clusterid",
        Nclusterid => "nclusterid",
        ClusterCtaid => "cluster_ctaid",
        ClusterNctaid => "cluster_nctaid",
    }
}

/// A read-only special register such as `%tid.x` or `%laneid`.
///
/// ```
/// use ptx_parser::{Dim, SpecialReg, SpecialVector};
/// assert_eq!(SpecialReg::Vector(SpecialVector::Ctaid, Dim::Y).to_string(), "%ctaid.y");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// One component of a vector special register.
    Vector(SpecialVector, Dim),
    /// A scalar special register.
    Scalar(SpecialScalar),
}

impl fmt::Display for SpecialReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecialReg::Vector(v, d) => write!(f, "%{v}.{d}"),
            SpecialReg::Scalar(s) => write!(f, "%{s}"),
        }
    }
}

/// How an integer literal was written, kept so it prints back the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Radix {
    /// `42`
    #[default]
    Decimal,
    /// `0x2A` (printed with upper-case digits)
    Hex,
    /// `052`
    Octal,
    /// `0b101010`
    Binary,
}

/// An integer literal: sign and magnitude as written.
///
/// ```
/// use ptx_parser::IntLit;
/// let minus_one = IntLit::new(-1);
/// assert_eq!(minus_one.bits(), u64::MAX);
/// assert_eq!(minus_one.to_string(), "-1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntLit {
    /// Written with a leading `-`.
    pub negative: bool,
    /// The digits' value.
    pub magnitude: u64,
    /// How the digits were written.
    pub radix: Radix,
    /// Written with the `U` suffix.
    pub unsigned_suffix: bool,
}

impl IntLit {
    /// A decimal literal with value `v`.
    pub fn new(v: i64) -> IntLit {
        IntLit {
            negative: v < 0,
            magnitude: v.unsigned_abs(),
            radix: Radix::Decimal,
            unsigned_suffix: false,
        }
    }

    /// The value as 64 two's-complement bits (what a register would hold).
    pub fn bits(self) -> u64 {
        if self.negative {
            self.magnitude.wrapping_neg()
        } else {
            self.magnitude
        }
    }

    /// The value as a signed 64-bit number (wrapping above `i64::MAX`).
    pub fn as_i64(self) -> i64 {
        self.bits() as i64
    }
}

impl fmt::Display for IntLit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        match self.radix {
            Radix::Decimal => write!(f, "{}", self.magnitude)?,
            Radix::Hex => write!(f, "0x{:X}", self.magnitude)?,
            Radix::Octal => write!(f, "0{:o}", self.magnitude)?,
            Radix::Binary => write!(f, "0b{:b}", self.magnitude)?,
        }
        if self.unsigned_suffix {
            f.write_str("U")?;
        }
        Ok(())
    }
}

/// A literal operand or initializer value.
///
/// ```
/// use ptx_parser::Immediate;
/// assert_eq!(Immediate::F32(1.0f32.to_bits()).to_string(), "0f3F800000");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Immediate {
    /// An integer.
    Int(IntLit),
    /// A single-precision float written as raw bits, `0f3F800000` (sign included in the bits;
    /// `-0f3F800000` reads as the negated value).
    F32(u32),
    /// A double-precision float written as raw bits, `0d3FF0000000000000`.
    F64(u64),
    /// A decimal float such as `1.5` or `-2e-3`.
    Float(f64),
}

impl fmt::Display for Immediate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Immediate::Int(i) => i.fmt(f),
            Immediate::F32(bits) => write!(f, "0f{bits:08X}"),
            Immediate::F64(bits) => write!(f, "0d{bits:016X}"),
            Immediate::Float(v) => {
                // `{:?}` always keeps a `.` or exponent and round-trips the exact value.
                write!(f, "{v:?}")
            }
        }
    }
}

/// What an address expression is relative to.
#[derive(Clone, Debug, PartialEq)]
pub enum AddressBase {
    /// A register holding an address: `[%rd1]`.
    Reg(String),
    /// A variable or parameter name: `[saxpy_param_0]`.
    Symbol(String),
    /// An absolute address: `[1024]`.
    Imm(IntLit),
}

/// A memory operand `[base+offset]`.
///
/// ```
/// use ptx_parser::{Address, AddressBase};
/// let a = Address { base: AddressBase::Reg("%rd4".into()), offset: Some(16) };
/// assert_eq!(a.to_string(), "[%rd4+16]");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Address {
    /// The base.
    pub base: AddressBase,
    /// The byte offset, if one was written (`[%rd1+0]` keeps `Some(0)`).
    pub offset: Option<i64>,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        match &self.base {
            AddressBase::Reg(r) | AddressBase::Symbol(r) => f.write_str(r)?,
            AddressBase::Imm(i) => i.fmt(f)?,
        }
        // Negative offsets print as `+-4`, the way nvcc writes them.
        if let Some(off) = self.offset {
            write!(f, "+{off}")?;
        }
        f.write_str("]")
    }
}

/// One instruction operand.
///
/// Names starting with `%` (and names declared with `.reg` in the enclosing function) are
/// registers; names defined as labels in the enclosing function are labels; other names are
/// symbols (variables, parameters, functions).
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register such as `%r1` (the name includes its `%`).
    Reg(String),
    /// A special register such as `%tid.x`.
    Special(SpecialReg),
    /// A literal.
    Imm(Immediate),
    /// A memory address.
    Address(Address),
    /// A braced vector `{%f1, %f2}`.
    Vector(Vec<Operand>),
    /// A parenthesised list, as in `call (retval0), f, (param0);`.
    List(Vec<Operand>),
    /// A variable, parameter or function name.
    Symbol(String),
    /// A label defined in the enclosing function, as a branch target.
    Label(String),
    /// The sink `_`.
    Sink,
    /// A negated predicate `!%p1`.
    Not(Box<Operand>),
    /// A tensor-map address with coordinates, `[%rd1, {%r1, %r2}]`, as bulk tensor copies
    /// (`cp.async.bulk.tensor`) take it.
    TensorCoords {
        /// The tensor map: a register holding its address, or a parameter or variable name.
        map: String,
        /// The coordinates, one per tensor dimension.
        coords: Vec<Operand>,
    },
    /// A paired destination `a|b`: the two predicates of `setp` (`%p1|%p2`), or the value and
    /// in-range predicate of `shfl.sync` (`%r1|%p1`). Either name may be `_`.
    PredPair(String, String),
}
