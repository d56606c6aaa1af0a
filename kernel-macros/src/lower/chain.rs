//! Intrinsics that `kernel_dsl::intrinsics` lowers generically ([`Lowering::Chain`]): scalar
//! arguments of the row's types, the first instruction taking them all and each later one the
//! previous result. A new row there needs nothing here.
//!
//! [`Lowering::Chain`]: kernel_dsl::intrinsics::Lowering::Chain

use super::expr::is_float;
use super::value::{Scalar, Value};
use super::Lowerer;
use crate::diag::{err, DResult, SpanRange};
use crate::dsl_type::rust_name;
use kernel_dsl::intrinsics::{Intrinsic, Ty};
use kernel_dsl::ir::Operand;
use kernel_dsl::op::Op;
use kernel_dsl::ScalarType;
use syn::Expr;

/// A parameter's scalar type; chain rows take scalars only (a kernel-dsl test checks).
fn scalar_param(intr: &Intrinsic, k: usize) -> ScalarType {
    match intr.params[k].ty {
        Ty::Scalar(t) => t,
        other => unreachable!("chain row `{}` takes {other:?}", intr.name),
    }
}

impl Lowerer<'_> {
    /// `name(args)`; the caller has checked the arity.
    pub(crate) fn chain_call(
        &mut self,
        intr: &Intrinsic,
        ops: &[Op],
        args: &[&Expr],
        span: SpanRange,
    ) -> DResult<Value> {
        let mut srcs = Vec::with_capacity(args.len());
        for (k, arg) in args.iter().enumerate() {
            let v = self.expr_as(arg, scalar_param(intr, k))?;
            srcs.push(self.materialize(&v).into());
        }
        self.span = span;
        Ok(self.emit_chain(intr, ops, srcs))
    }

    /// `recv.name(rest)`, the receiver already lowered; the caller has checked the arity.
    pub(crate) fn chain_method(
        &mut self,
        intr: &Intrinsic,
        ops: &[Op],
        recv: Scalar,
        rest: &[&Expr],
        span: SpanRange,
    ) -> DResult<Value> {
        let want = scalar_param(intr, 0);
        if recv.ty != want {
            let hint = if is_float(want) && is_float(recv.ty) {
                format!(
                    ": convert with `as {}`, call `{}`, and convert back",
                    rust_name(want),
                    intr.name
                )
            } else {
                String::new()
            };
            return err(
                span,
                format!(
                    "`{}` is defined on `{}` in kernels, found `{}`{hint}",
                    intr.name,
                    rust_name(want),
                    rust_name(recv.ty)
                ),
            );
        }
        let mut srcs = vec![self.materialize(&recv).into()];
        for (k, arg) in rest.iter().enumerate() {
            let v = self.expr_as(arg, scalar_param(intr, k + 1))?;
            srcs.push(self.materialize(&v).into());
        }
        self.span = span;
        Ok(self.emit_chain(intr, ops, srcs))
    }

    fn emit_chain(&mut self, intr: &Intrinsic, ops: &[Op], mut srcs: Vec<Operand>) -> Value {
        let Ty::Scalar(result) = intr.result else {
            for op in ops {
                self.inst(*op, vec![], std::mem::take(&mut srcs));
            }
            return Value::Unit;
        };
        let mut last = None;
        for op in ops {
            let d = self.b.reg(result);
            self.inst(*op, vec![d.into()], std::mem::take(&mut srcs));
            srcs = vec![d.into()];
            last = Some(d);
        }
        Value::Scalar(Scalar::reg(last.expect("a chain has an instruction")))
    }
}
