//! The values an expression lowers to, and the bindings `let` and parameters create.

use kernel_dsl::ir::{Imm, Operand, Reg};
use kernel_dsl::ScalarType;

/// A typed scalar: a register, or an immediate of a known type.
#[derive(Clone, Debug, PartialEq)]
pub struct Scalar {
    pub op: Operand,
    pub ty: ScalarType,
}

impl Scalar {
    pub fn reg(r: Reg) -> Scalar {
        Scalar {
            op: Operand::Reg(r),
            ty: r.ty,
        }
    }

    /// The compile-time integer value, if this is an integer immediate.
    pub fn const_int(&self) -> Option<i64> {
        match self.op {
            Operand::Imm(Imm::Int(v)) => Some(v),
            _ => None,
        }
    }
}

/// Which grid or block vector a `Dim3` intrinsic reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim3Kind {
    ThreadIdx,
    BlockIdx,
    BlockDim,
    GridDim,
}

/// A global-memory buffer parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct SliceRef {
    pub name: String,
    pub base: Reg,
    pub elem: ScalarType,
    pub mutable: bool,
}

/// A shared-memory array: static (`len` known) or dynamic.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedRef {
    pub symbol: String,
    pub elem: ScalarType,
    pub len: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Scalar(Scalar),
    /// An integer literal without a suffix: takes the type its use needs.
    IntLit(i64),
    /// A float literal without a suffix.
    FloatLit(f64),
    Slice(SliceRef),
    Shared(SharedRef),
    /// A `&TensorMap<T, RANK>` parameter: the generic address of its 128 bytes in the
    /// parameter space, which the bulk tensor copy reads.
    TensorMap {
        addr: Reg,
        elem: ScalarType,
        rank: u32,
    },
    /// A fixed-size local array kept in registers, one per element.
    Array {
        elems: Vec<Reg>,
        elem: ScalarType,
    },
    /// A tuple: its elements, each a scalar, literal, array or tuple.
    Tuple(Vec<Value>),
    Dim3(Dim3Kind),
    Unit,
}

impl Value {
    /// What the value is, in words, for messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Scalar(s) => format!("`{}`", crate::dsl_type::rust_name(s.ty)),
            Value::IntLit(_) => "an integer literal".into(),
            Value::FloatLit(_) => "a float literal".into(),
            Value::Slice(s) => format!(
                "`&{}[{}]`",
                if s.mutable { "mut " } else { "" },
                crate::dsl_type::rust_name(s.elem)
            ),
            Value::Shared(s) => {
                format!("a shared array of `{}`", crate::dsl_type::rust_name(s.elem))
            }
            Value::Array { elems, elem } => {
                format!("`[{}; {}]`", crate::dsl_type::rust_name(*elem), elems.len())
            }
            Value::Tuple(parts) => format!("a tuple of {} fields", parts.len()),
            Value::TensorMap { elem, rank, .. } => format!(
                "`&TensorMap<{}, {rank}>`",
                crate::dsl_type::rust_name(*elem)
            ),
            Value::Dim3(_) => "a `Dim3`".into(),
            Value::Unit => "`()`".into(),
        }
    }
}

/// A name in scope.
#[derive(Clone, Debug)]
pub struct Binding {
    pub value: Value,
    pub mutable: bool,
    /// For a `let` whose type came from an unsuffixed literal: its index, so that a later
    /// use can fix the type on the next lowering pass.
    pub flex: Option<usize>,
}
