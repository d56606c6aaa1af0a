//! Loads issued under a predicate (`@p ld…`) instead of inside a branch.
//!
//! A load inside `if active { … }` whose value is used inside the same branch makes the thread
//! wait for it before the next branch issues the next load: a thread holding four chunks then
//! has one load in flight instead of four. A guarded load has no branch to wait at, so a thread
//! issues every chunk's load first and widens them afterwards.

use super::tensor::{Access, Format, Tensor};
use super::{bf16, half};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{DType, Pred, F32, U16, U32};
use kernel_dsl::ir::{AddrBase, Guard, Operand};
use kernel_dsl::op::Op;
use kernel_dsl::{StateSpace, VecWidth};

/// The bits of one access as loaded (zero where its predicate was false), not yet widened.
pub(crate) enum RawChunk {
    /// f32 elements.
    F32(Vec<Value<F32>>),
    /// One 16-bit element in the low half.
    Half(Value<U16>, Format),
    /// Four words, each two 16-bit elements (element order: low half first).
    Words([Value<U32>; 4], Format),
}

impl RawChunk {
    /// The elements as f32, in memory order.
    pub(crate) fn widen(&self, b: &mut KernelBuilder) -> Vec<Value<F32>> {
        match self {
            RawChunk::F32(v) => v.clone(),
            RawChunk::Half(h, Format::F16) => vec![half::widen(b, *h)],
            RawChunk::Half(h, _) => vec![bf16::widen(b, *h)],
            RawChunk::Words(w, Format::F16) => {
                w.iter().flat_map(|&w| half::unpack2(b, w)).collect()
            }
            RawChunk::Words(w, _) => w.iter().flat_map(|&w| bf16::unpack2(b, w)).collect(),
        }
    }
}

/// `n` registers initialized to `zero`, the destinations of a guarded load.
fn zeroed<T: DType>(b: &mut KernelBuilder, zero: Value<T>, n: usize) -> Vec<Value<T>> {
    (0..n).map(|_| b.var(zero)).collect()
}

/// Loads the `access.width()` elements of `t` starting at `index` where `pred` holds.
pub(crate) fn load_if(
    b: &mut KernelBuilder,
    t: &Tensor,
    index: Value<U32>,
    access: Access,
    pred: Value<Pred>,
) -> RawChunk {
    let addr = t.address(b, index);
    let format = t.format();
    let vec = (access == Access::Vector).then_some(VecWidth::V4);
    let (raw, dsts): (RawChunk, Vec<Operand>) = match (format, access) {
        (Format::F32, _) => {
            let n = access.width_of(format) as usize;
            let zero = b.const_f32(0.0);
            let regs = zeroed(b, zero, n);
            let ops = regs.iter().map(|r| r.reg().into()).collect();
            (RawChunk::F32(regs), ops)
        }
        (_, Access::Scalar) => {
            let zero = b.const_int::<U16>(0);
            let h = zeroed(b, zero, 1)[0];
            (RawChunk::Half(h, format), vec![h.reg().into()])
        }
        (_, Access::Vector) => {
            let zero = b.const_u32(0);
            let w = zeroed(b, zero, 4);
            let ops = w.iter().map(|r| r.reg().into()).collect();
            (RawChunk::Words([w[0], w[1], w[2], w[3]], format), ops)
        }
    };
    let ty = match &raw {
        RawChunk::F32(_) => F32::TY,
        RawChunk::Half(..) => U16::TY,
        RawChunk::Words(..) => U32::TY,
    };
    let dst = match vec {
        Some(_) => Operand::Vector(dsts),
        None => dsts
            .into_iter()
            .next()
            .expect("a scalar access has one destination"),
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
    raw
}
