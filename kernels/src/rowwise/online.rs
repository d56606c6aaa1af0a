//! The running (max, sum) of an online softmax in base 2: after folding values `t`, `m` is
//! their maximum and `s = Σ 2^(t − m)`.

use super::index::finite_or_zero;
use super::reduce::GroupMax;
use crate::codegen::math::ex2;
use crate::codegen::rows::GroupSum;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::F32;

/// Folds `vals` into the running `(m, s)`: `m' = max(m, vals)`, `s' = s·2^(m−m') + Σ 2^(v−m')`.
pub(crate) fn fold(b: &mut KernelBuilder, m: Value<F32>, s: Value<F32>, vals: &[Value<F32>]) {
    let mut nm = m;
    for &v in vals {
        nm = b.max(nm, v);
    }
    let base = finite_or_zero(b, nm);
    let d = b.sub(m, base);
    let rescale = ex2(b, d);
    let kept = b.mul(s, rescale);
    let acc = b.var(kept);
    for &v in vals {
        let e = b.sub(v, base);
        let e = ex2(b, e);
        let t = b.add(acc, e);
        b.assign(acc, t);
    }
    b.assign(s, acc);
    b.assign(m, nm);
}

/// The row's `(M, S)` from every thread's running `(m, s)`: `M` is the group maximum (0 where
/// it is −∞, so it can be subtracted safely) and `S = Σ s·2^(m − M)` over the group.
pub(crate) fn combine(
    b: &mut KernelBuilder,
    maxer: &GroupMax,
    summer: &GroupSum,
    m: Value<F32>,
    s: Value<F32>,
) -> (Value<F32>, Value<F32>) {
    let row_max = maxer.max(b, m);
    let top = finite_or_zero(b, row_max);
    let d = b.sub(m, top);
    let rescale = ex2(b, d);
    let mine = b.mul(s, rescale);
    let total = summer.sum(b, &[mine])[0];
    (top, total)
}
