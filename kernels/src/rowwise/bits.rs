//! Bit manipulation: ballots as u32 masks, lowest set bit, shifts by a register, predicate
//! logic.

use crate::codegen::fresh;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Op;
use kernel_dsl::scalar::{Pred, U32};
use kernel_dsl::ScalarType;

/// `vote.ballot` over the full warp, as a u32 mask (bit `l` set where lane `l`'s `p` holds).
pub(crate) fn ballot(b: &mut KernelBuilder, p: Value<Pred>) -> Value<U32> {
    let mask = b.ballot(p);
    let u = fresh::<U32>(b);
    b.inst(
        Op::Mov {
            ty: ScalarType::B32,
        },
        vec![u.reg().into()],
        vec![mask.reg().into()],
    );
    u
}

/// The index of the lowest set bit of a non-zero `m` (`clz(brev(m))`).
pub(crate) fn lowest_bit(b: &mut KernelBuilder, m: Value<U32>) -> Value<U32> {
    let r = fresh::<U32>(b);
    b.inst(
        Op::Brev {
            ty: ScalarType::B32,
        },
        vec![r.reg().into()],
        vec![m.reg().into()],
    );
    let n = fresh::<U32>(b);
    b.inst(
        Op::Clz {
            ty: ScalarType::B32,
        },
        vec![n.reg().into()],
        vec![r.reg().into()],
    );
    n
}

/// `v << n` with the shift amount in a register.
pub(crate) fn shl_by(b: &mut KernelBuilder, v: Value<U32>, n: Value<U32>) -> Value<U32> {
    let d = fresh::<U32>(b);
    b.inst(
        Op::Shl {
            ty: ScalarType::B32,
        },
        vec![d.reg().into()],
        vec![v.reg().into(), n.reg().into()],
    );
    d
}

/// `x && y` on predicates.
pub(crate) fn and_pred(b: &mut KernelBuilder, x: Value<Pred>, y: Value<Pred>) -> Value<Pred> {
    pred_op(
        b,
        x,
        y,
        Op::And {
            ty: ScalarType::Pred,
        },
    )
}

/// `x || y` on predicates.
pub(crate) fn or_pred(b: &mut KernelBuilder, x: Value<Pred>, y: Value<Pred>) -> Value<Pred> {
    pred_op(
        b,
        x,
        y,
        Op::Or {
            ty: ScalarType::Pred,
        },
    )
}

fn pred_op(b: &mut KernelBuilder, x: Value<Pred>, y: Value<Pred>, op: Op) -> Value<Pred> {
    let d = fresh::<Pred>(b);
    b.inst(
        op,
        vec![d.reg().into()],
        vec![x.reg().into(), y.reg().into()],
    );
    d
}
