//! Tuples: `(a, b)` values, `t.0` fields, `let (x, mut y) = …` patterns, and tuple parameters
//! and results of `#[device]` helpers. A tuple is its elements' registers, so passing or
//! returning one costs no instruction; it is immutable (destructure it to change a part).

use super::value::{Binding, Scalar, Value};
use super::Lowerer;
use crate::diag::{err, DResult, SpanRange};
use crate::dsl_type::{rust_name, scalar_of};
use kernel_dsl::ir::Operand;

impl Lowerer<'_> {
    /// `(a, b, …)`: each element lowered once, scalars copied into registers of their own so
    /// that a later write to `a` leaves the tuple alone.
    pub(crate) fn tuple_expr(&mut self, t: &syn::ExprTuple) -> DResult<Value> {
        if t.elems.is_empty() {
            return Ok(Value::Unit);
        }
        let mut parts = Vec::with_capacity(t.elems.len());
        for e in &t.elems {
            let v = self.expr(e, None)?;
            parts.push(self.owned_part(v, crate::diag::range(&e))?);
        }
        Ok(Value::Tuple(parts))
    }

    /// A value as a tuple element: its own registers, or a literal that keeps its flexible
    /// type until used.
    fn owned_part(&mut self, v: Value, span: SpanRange) -> DResult<Value> {
        Ok(match v {
            Value::Scalar(s) if matches!(s.op, Operand::Reg(_)) => {
                let r = self.b.reg(s.ty);
                self.mov(r, s);
                Value::Scalar(Scalar::reg(r))
            }
            Value::Array { elems, elem } => self.copied_array(&elems, elem),
            v @ (Value::Scalar(_) | Value::IntLit(_) | Value::FloatLit(_) | Value::Tuple(_)) => v,
            other => {
                return err(
                    span,
                    format!(
                        "a tuple holds numbers, arrays and tuples, not {}",
                        other.describe()
                    ),
                )
            }
        })
    }

    /// `t.0`.
    pub(crate) fn tuple_field(
        &mut self,
        parts: Vec<Value>,
        member: &syn::Member,
    ) -> DResult<Value> {
        let syn::Member::Unnamed(i) = member else {
            return err(
                crate::diag::range(member),
                "a tuple's fields are numbered: `t.0`, `t.1`",
            );
        };
        let n = parts.len();
        parts.into_iter().nth(i.index as usize).map_or_else(
            || {
                err(
                    crate::diag::range(member),
                    format!("this tuple has {n} fields, numbered from 0"),
                )
            },
            Ok,
        )
    }

    /// `v` as the type `ty` says: literals take the declared type, and a mismatch is an
    /// error naming both types.
    pub(crate) fn conform(&mut self, v: Value, ty: &syn::Type, span: SpanRange) -> DResult<Value> {
        match ty {
            syn::Type::Paren(p) => self.conform(v, &p.elem, span),
            syn::Type::Tuple(t) => {
                let Value::Tuple(parts) = v else {
                    return err(
                        span,
                        format!(
                            "expected `{}`, found {}",
                            quote::ToTokens::to_token_stream(ty),
                            v.describe()
                        ),
                    );
                };
                if parts.len() != t.elems.len() {
                    return err(
                        span,
                        format!(
                            "expected a tuple of {} fields, found one of {}",
                            t.elems.len(),
                            parts.len()
                        ),
                    );
                }
                let mut out = Vec::with_capacity(parts.len());
                for (p, elem_ty) in parts.into_iter().zip(&t.elems) {
                    out.push(self.conform(p, elem_ty, span)?);
                }
                Ok(Value::Tuple(out))
            }
            syn::Type::Array(a) => {
                let want = scalar_of(&a.elem, &self.spec.types)?;
                match v {
                    Value::Array { elem, .. } if elem == want => Ok(v),
                    other => err(
                        span,
                        format!(
                            "expected `[{}; _]`, found {}",
                            rust_name(want),
                            other.describe()
                        ),
                    ),
                }
            }
            _ => {
                let want = scalar_of(ty, &self.spec.types)?;
                let s = self.as_scalar(v, Some(want), span)?;
                if s.ty != want {
                    return err(span, super::expr::mismatch(want, s.ty));
                }
                Ok(Value::Scalar(s))
            }
        }
    }

    /// Binds `pat` to `value`: a name, `_`, a tuple of patterns, or any of these with a type.
    pub(crate) fn bind_pattern(&mut self, pat: &syn::Pat, value: Value) -> DResult<()> {
        let span = crate::diag::range(pat);
        match pat {
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Type(pt) => {
                let v = self.conform(value, &pt.ty, span)?;
                self.bind_pattern(&pt.pat, v)
            }
            syn::Pat::Tuple(t) => {
                let Value::Tuple(parts) = value else {
                    return err(
                        span,
                        format!("a tuple pattern needs a tuple, found {}", value.describe()),
                    );
                };
                if parts.len() != t.elems.len()
                    || t.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_)))
                {
                    return err(
                        span,
                        format!(
                            "this tuple has {} fields: name each one (`_` for one you do not use)",
                            parts.len()
                        ),
                    );
                }
                for (p, v) in t.elems.iter().zip(parts) {
                    self.bind_pattern(p, v)?;
                }
                Ok(())
            }
            syn::Pat::Slice(sl) => {
                let Value::Array { elems, .. } = value else {
                    return err(
                        span,
                        format!(
                            "an array pattern needs an array, found {}",
                            value.describe()
                        ),
                    );
                };
                if elems.len() != sl.elems.len()
                    || sl.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_)))
                {
                    return err(
                        span,
                        format!(
                            "this array has {} elements: name each one (`_` for one you do not use)",
                            elems.len()
                        ),
                    );
                }
                for (p, r) in sl.elems.iter().zip(elems) {
                    self.bind_pattern(p, Value::Scalar(Scalar::reg(r)))?;
                }
                Ok(())
            }
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let mutable = pi.mutability.is_some();
                let value = match value {
                    // A mutable name owns its registers (a tuple's are already its own).
                    Value::Scalar(s) if mutable => {
                        let r = self.b.reg(s.ty);
                        self.mov(r, s);
                        Value::Scalar(Scalar::reg(r))
                    }
                    Value::IntLit(_) | Value::FloatLit(_) if mutable => {
                        return err(
                            span,
                            "a mutable name bound from a literal in a tuple needs its type: suffix the literal (`0u32`, `1.0f32`)",
                        )
                    }
                    Value::Tuple(_) if mutable => {
                        return err(
                            span,
                            "a tuple cannot be changed in place: destructure it, `let (mut a, mut b) = …`",
                        )
                    }
                    v => v,
                };
                self.bind(
                    &pi.ident.to_string(),
                    Binding {
                        value,
                        mutable,
                        flex: None,
                    },
                );
                Ok(())
            }
            other => err(
                crate::diag::range(other),
                "kernels bind names, `_`, and tuples and arrays of them: `let (a, [b, c]) = …`",
            ),
        }
    }

    /// `if c { (a, b) } else { (x, y) }` with both arms pure: one `selp` per element.
    pub(crate) fn select_tuple(
        &mut self,
        cond: &kernel_dsl::ir::Reg,
        a: Value,
        b: Value,
        span: SpanRange,
    ) -> DResult<Value> {
        let d = self.tuple_place(a, span)?;
        self.select_into(*cond, &d, b, span)?;
        Ok(d)
    }

    /// Fresh registers holding `v` (literals take their default type), as the destination
    /// both arms of a tuple-valued `if` write.
    pub(crate) fn tuple_place(&mut self, v: Value, span: SpanRange) -> DResult<Value> {
        Ok(match v {
            Value::Tuple(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for p in parts {
                    out.push(self.tuple_place(p, span)?);
                }
                Value::Tuple(out)
            }
            Value::Array { elems, elem } => self.copied_array(&elems, elem),
            other => {
                let s = self.as_scalar(other, None, span)?;
                let r = self.b.reg(s.ty);
                self.mov(r, s);
                Value::Scalar(Scalar::reg(r))
            }
        })
    }

    /// Writes `v` into the registers of `dst`, element by element, with matching types.
    pub(crate) fn tuple_assign(&mut self, dst: &Value, v: Value, span: SpanRange) -> DResult<()> {
        self.each_pair(dst, v, span, &mut |l, d, s| {
            l.mov(d, s);
            Ok(())
        })
    }

    /// `dst[i] = cond ? dst[i] : b[i]` for every element (`dst` holds the then-arm).
    fn select_into(
        &mut self,
        cond: kernel_dsl::ir::Reg,
        dst: &Value,
        b: Value,
        span: SpanRange,
    ) -> DResult<()> {
        self.each_pair(dst, b, span, &mut |l, d, s| {
            let s = l.materialize(&s);
            l.inst(
                kernel_dsl::op::Op::Selp { ty: d.ty },
                vec![d.into()],
                vec![Operand::Reg(d), s.into(), cond.into()],
            );
            Ok(())
        })
    }

    /// Calls `f(destination register, source scalar)` for each element of `dst` and `v`,
    /// which must have the same shape and element types.
    fn each_pair(
        &mut self,
        dst: &Value,
        v: Value,
        span: SpanRange,
        f: &mut dyn FnMut(&mut Self, kernel_dsl::ir::Reg, Scalar) -> DResult<()>,
    ) -> DResult<()> {
        match (dst, v) {
            (Value::Tuple(ds), Value::Tuple(vs)) if ds.len() == vs.len() => {
                for (d, v) in ds.iter().zip(vs) {
                    self.each_pair(d, v, span, f)?;
                }
                Ok(())
            }
            (
                Value::Array { elems: ds, elem },
                Value::Array {
                    elems: vs,
                    elem: e2,
                },
            ) if ds.len() == vs.len() && *elem == e2 => {
                for (d, v) in ds.iter().zip(vs) {
                    f(self, *d, Scalar::reg(v))?;
                }
                Ok(())
            }
            (Value::Scalar(d), v) if !matches!(v, Value::Tuple(_) | Value::Array { .. }) => {
                let Operand::Reg(d) = d.op else {
                    unreachable!("a tuple place holds registers")
                };
                let s = self.as_scalar(v, Some(d.ty), span)?;
                if s.ty != d.ty {
                    return err(span, super::expr::mismatch(d.ty, s.ty));
                }
                f(self, d, s)
            }
            (d, v) => err(
                span,
                format!(
                    "both arms must have the same shape: {} and {}",
                    d.describe(),
                    v.describe()
                ),
            ),
        }
    }
}
