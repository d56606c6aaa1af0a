//! Specializations: what each generic parameter stands for in one instance, and the entry
//! name derived from them (`rms_norm__f32_256`).

use crate::attr::Instance;
use crate::diag::{err, DResult};
use crate::dsl_type::{rust_name, scalar_of};
use crate::lower::Specialization;
use std::collections::BTreeMap;
use syn::{Expr, GenericArgument, GenericParam};

/// One instance to build.
pub struct Resolved {
    pub spec: Specialization,
    /// The entry name: the function's name, plus `__` and the arguments for generic kernels.
    pub entry: String,
    /// What each generic parameter stands for (`T = bf16, W = 8`); `None` for a kernel that
    /// is not generic.
    pub label: Option<String>,
}

impl Resolved {
    /// `d` with a note naming this instance, so an error that only some instances have says
    /// which one.
    pub fn note(&self, mut d: crate::diag::Diag) -> crate::diag::Diag {
        if let Some(label) = &self.label {
            d.message = format!(
                "{}\n  note: in the instance `{label}` (entry `{}`)",
                d.message, self.entry
            );
        }
        d
    }
}

/// Resolves the instances of `func` (one, unnamed, for a non-generic kernel).
pub fn resolve(func: &syn::ItemFn, instances: &[Instance]) -> DResult<Vec<Resolved>> {
    let base = func.sig.ident.to_string();
    if instances.is_empty() {
        return Ok(vec![Resolved {
            spec: Specialization::default(),
            entry: base,
            label: None,
        }]);
    }
    instances
        .iter()
        .map(|inst| resolve_one(func, &base, inst))
        .collect()
}

/// Whether a type parameter stands for an op (`O: UnaryOp`) rather than an element type
/// (`T: Element`).
pub fn is_op_param(tp: &syn::TypeParam) -> bool {
    !tp.bounds.iter().any(|b| {
        matches!(b, syn::TypeParamBound::Trait(t)
            if t.path.segments.last().is_some_and(|s| s.ident == "Element"))
    })
}

/// The name of the type an op parameter stands for (`Silu` in `<f32, Silu>`).
pub fn op_type_name(t: &syn::Type) -> DResult<String> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => Ok(p
            .path
            .segments
            .last()
            .expect("a path has a segment")
            .ident
            .to_string()),
        other => err(
            crate::diag::range(&other),
            "an op parameter takes a type with a `#[device] impl`, such as `Silu`",
        ),
    }
}

fn resolve_one(func: &syn::ItemFn, base: &str, inst: &Instance) -> DResult<Resolved> {
    let mut spec = Specialization::default();
    let mut parts = Vec::new();
    let mut label = Vec::new();
    for (param, arg) in func.sig.generics.params.iter().zip(&inst.args) {
        match (param, arg) {
            (GenericParam::Type(tp), GenericArgument::Type(t)) if is_op_param(tp) => {
                let name = op_type_name(t)?;
                parts.push(name.to_lowercase());
                label.push(format!("{} = {name}", tp.ident));
                spec.ops.insert(tp.ident.to_string(), name);
            }
            (GenericParam::Type(tp), GenericArgument::Type(t)) => {
                let ty = scalar_of(t, &BTreeMap::new())?;
                spec.types.insert(tp.ident.to_string(), ty);
                parts.push(rust_name(ty).to_string());
                label.push(format!("{} = {}", tp.ident, rust_name(ty)));
            }
            (GenericParam::Const(cp), GenericArgument::Const(e)) => {
                let ty = scalar_of(&cp.ty, &BTreeMap::new())?;
                let v = literal_int(e)?;
                spec.consts.insert(cp.ident.to_string(), (v, ty));
                parts.push(v.to_string());
                label.push(format!("{} = {v}", cp.ident));
            }
            (GenericParam::Const(cp), GenericArgument::Type(syn::Type::Path(p))) => {
                // `<f32, N>` where N names a constant is ambiguous to the parser; only
                // literals are accepted so that entry names are spelled out.
                return err(
                    crate::diag::range(&p),
                    format!(
                        "the const parameter `{}` takes a literal here, e.g. `256`",
                        cp.ident
                    ),
                );
            }
            (GenericParam::Type(tp), other) => {
                return err(
                    crate::diag::range(&other),
                    format!(
                        "`{}` is a type parameter: give a type such as `f32`",
                        tp.ident
                    ),
                )
            }
            (GenericParam::Const(cp), other) => {
                return err(
                    crate::diag::range(&other),
                    format!(
                        "`{}` is a const parameter: give a literal such as `256`",
                        cp.ident
                    ),
                )
            }
            (GenericParam::Lifetime(l), _) => {
                return err(
                    crate::diag::range(&l),
                    "kernels take no lifetime parameters",
                )
            }
        }
    }
    Ok(Resolved {
        spec,
        entry: format!("{base}__{}", parts.join("_")),
        label: Some(label.join(", ")),
    })
}

fn literal_int(e: &Expr) -> DResult<i64> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i
            .base10_parse::<i64>()
            .map_err(|x| crate::diag::Diag::new(crate::diag::range(&i), x.to_string())),
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => literal_int(inner),
            _ => err(crate::diag::range(&e), "expected an integer literal"),
        },
        _ => err(crate::diag::range(&e), "expected an integer literal"),
    }
}

/// Evaluates a constant expression of the attribute (`block = BLOCK`), under `spec`.
pub fn eval(e: &Expr, spec: &Specialization) -> DResult<i64> {
    match e {
        Expr::Lit(_) => literal_int(e),
        Expr::Paren(p) => eval(&p.expr, spec),
        Expr::Path(p) if p.path.segments.len() == 2 => {
            // `T::VEC`: 16 bytes of the type `T` stands for in this instance.
            let (t, c) = (&p.path.segments[0].ident, &p.path.segments[1].ident);
            match (spec.types.get(&t.to_string()), c.to_string().as_str()) {
                (Some(ty), "VEC") => Ok(16 / ty.bytes() as i64),
                _ => err(
                    crate::diag::range(&e),
                    format!("`{t}::{c}` is not a constant here: the attribute knows `T::VEC` of type parameters"),
                ),
            }
        }
        Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            spec.consts.get(&name).map(|(v, _)| *v).ok_or_else(|| {
                crate::diag::Diag::new(
                    crate::diag::range(&e),
                    format!("`{name}` is not a const parameter of this kernel"),
                )
            })
        }
        Expr::Binary(b) => {
            let (x, y) = (eval(&b.left, spec)?, eval(&b.right, spec)?);
            match b.op {
                syn::BinOp::Add(_) => Ok(x + y),
                syn::BinOp::Sub(_) => Ok(x - y),
                syn::BinOp::Mul(_) => Ok(x * y),
                syn::BinOp::Div(_) if y != 0 => Ok(x / y),
                _ => err(
                    crate::diag::range(&b.op),
                    "only + - * / are allowed in constant expressions",
                ),
            }
        }
        Expr::If(i) => {
            let then = match i.then_branch.stmts.as_slice() {
                [syn::Stmt::Expr(v, None)] => v,
                _ => {
                    return err(
                        crate::diag::range(&i.then_branch),
                        "expected `{ constant }`",
                    )
                }
            };
            let Some((_, otherwise)) = &i.else_branch else {
                return err(crate::diag::range(&e), "a constant `if` needs an `else`");
            };
            if eval_condition(&i.cond, spec)? {
                eval(then, spec)
            } else {
                eval(otherwise, spec)
            }
        }
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(v, None) => eval(v, spec),
            _ => err(crate::diag::range(&e), "expected a constant expression"),
        },
        _ => err(crate::diag::range(&e), "expected a constant expression"),
    }
}

/// Evaluates the condition of a constant `if` in the attribute (`if W == 1 { 128 } else { 64 }`):
/// comparisons of constant expressions, joined by `&&`, `||` and `!`.
fn eval_condition(e: &Expr, spec: &Specialization) -> DResult<bool> {
    match e {
        Expr::Paren(p) => eval_condition(&p.expr, spec),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => Ok(!eval_condition(&u.expr, spec)?),
        Expr::Binary(b) => match b.op {
            syn::BinOp::And(_) => {
                Ok(eval_condition(&b.left, spec)? && eval_condition(&b.right, spec)?)
            }
            syn::BinOp::Or(_) => {
                Ok(eval_condition(&b.left, spec)? || eval_condition(&b.right, spec)?)
            }
            op => {
                let (x, y) = (eval(&b.left, spec)?, eval(&b.right, spec)?);
                match op {
                    syn::BinOp::Eq(_) => Ok(x == y),
                    syn::BinOp::Ne(_) => Ok(x != y),
                    syn::BinOp::Lt(_) => Ok(x < y),
                    syn::BinOp::Le(_) => Ok(x <= y),
                    syn::BinOp::Gt(_) => Ok(x > y),
                    syn::BinOp::Ge(_) => Ok(x >= y),
                    _ => err(
                        crate::diag::range(&b.op),
                        "expected a comparison: `==`, `!=`, `<`, `<=`, `>` or `>=`",
                    ),
                }
            }
        },
        _ => err(crate::diag::range(&e), "expected a comparison of constants"),
    }
}
