//! Loads issued under a predicate (`@p ld…`) instead of inside a branch.
//!
//! A load inside `if active { … }` whose value is used inside the same branch makes the thread
//! wait for it before the next branch issues the next load: a thread holding four chunks then
//! has one load in flight instead of four. A guarded load has no branch to wait at, so a thread
//! issues every chunk's load first and widens them afterwards.

use super::tensor::{Access, Tensor};
use super::{bf16, half};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Guard, Operand};
use kernel_dsl::op::Op;
use kernel_dsl::scalar::{Pred, Scalar, F32, U16, U32};
use kernel_dsl::{StateSpace, VecWidth};

/// `n` registers initialized to `zero`, the destinations of a guarded load.
fn zeroed<T: Scalar>(b: &mut KernelBuilder, zero: Value<T>, n: usize) -> Vec<Value<T>> {
    (0..n).map(|_| b.var(zero)).collect()
}

/// The bits of one access as loaded (zero where its predicate was false), not yet widened.
pub(crate) enum RawChunk {
    /// f32 elements.
    F32(Vec<Value<F32>>),
    /// One 16-bit element in the low half.
    Half(Value<U16>, FloatType),
    /// Four words, each two 16-bit elements (element order: low half first).
    Words([Value<U32>; 4], FloatType),
}

impl RawChunk {
    /// The elements as f32, in memory order.
    pub(crate) fn widen(&self, b: &mut KernelBuilder) -> Vec<Value<F32>> {
        match self {
            RawChunk::F32(v) => v.clone(),
            RawChunk::Half(h, FloatType::F16) => vec![half::widen(b, *h)],
            RawChunk::Half(h, _) => vec![bf16::widen(b, *h)],
            RawChunk::Words(w, FloatType::F16) => {
                w.iter().flat_map(|&w| half::unpack2(b, w)).collect()
            }
            RawChunk::Words(w, _) => w.iter().flat_map(|&w| bf16::unpack2(b, w)).collect(),
        }
    }

    /// Zeroed registers for one access of a `format` tensor.
    pub(crate) fn zeroed(b: &mut KernelBuilder, format: FloatType, access: Access) -> RawChunk {
        match (format, access) {
            (FloatType::F32, _) => {
                let zero = b.const_f32(0.0);
                RawChunk::F32(zeroed(b, zero, access.width(format) as usize))
            }
            (_, Access::Scalar) => {
                let zero = b.const_int::<U16>(0);
                RawChunk::Half(zeroed(b, zero, 1)[0], format)
            }
            (_, Access::Vector) => {
                let zero = b.const_u32(0);
                let w = zeroed(b, zero, 4);
                RawChunk::Words([w[0], w[1], w[2], w[3]], format)
            }
        }
    }

    /// Fresh registers holding a copy of these.
    pub(crate) fn copied(&self, b: &mut KernelBuilder) -> RawChunk {
        match self {
            RawChunk::F32(v) => RawChunk::F32(v.iter().map(|&r| b.var(r)).collect()),
            RawChunk::Half(h, f) => RawChunk::Half(b.var(*h), *f),
            RawChunk::Words(w, f) => RawChunk::Words(w.map(|r| b.var(r)), *f),
        }
    }

    /// Loads the access at element `index` of `t` into these registers where `pred` holds
    /// (elsewhere they keep their value). `t` has the format these were made for.
    pub(crate) fn load_into(
        &self,
        b: &mut KernelBuilder,
        t: &Tensor,
        index: Value<U32>,
        pred: Value<Pred>,
    ) {
        let addr = t.address(b, index);
        let (ty, vec, dst) = match self {
            RawChunk::F32(v) if v.len() == 1 => (F32::TY, None, v[0].reg().into()),
            RawChunk::F32(v) => (
                F32::TY,
                Some(VecWidth::V4),
                Operand::Vector(v.iter().map(|r| r.reg().into()).collect()),
            ),
            RawChunk::Half(h, _) => (U16::TY, None, h.reg().into()),
            RawChunk::Words(w, _) => (
                U32::TY,
                Some(VecWidth::V4),
                Operand::Vector(w.iter().map(|r| r.reg().into()).collect()),
            ),
        };
        b.inst_guarded(
            Guard {
                pred: pred.reg(),
                negated: false,
            },
            Op::Ld {
                space: StateSpace::Global,
                ty,
                vec,
                nc: t.nc(),
                cache: None,
            },
            vec![dst],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg()),
                offset: 0,
            }],
        );
    }
}

/// Loads the `access.width()` elements of `t` starting at `index` where `pred` holds (zero
/// elsewhere).
pub(crate) fn load_if(
    b: &mut KernelBuilder,
    t: &Tensor,
    index: Value<U32>,
    access: Access,
    pred: Value<Pred>,
) -> RawChunk {
    let raw = RawChunk::zeroed(b, t.format(), access);
    raw.load_into(b, t, index, pred);
    raw
}
