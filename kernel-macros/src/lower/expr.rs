//! Expressions: literals, names, operators, casts, indexing, `if` as a value, blocks.

use super::value::{Scalar, Value};
use super::Lowerer;
use crate::diag::{err, DResult, Diag};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{Imm, Operand};
use kernel_dsl::op::Op;
use kernel_dsl::ScalarType;
use syn::{BinOp, Expr};

pub(crate) fn is_int(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::U32
            | ScalarType::S32
            | ScalarType::U64
            | ScalarType::S64
            | ScalarType::U16
            | ScalarType::S16
    )
}

pub(crate) fn is_float(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::Bf16
    )
}

pub(crate) fn is_signed(t: ScalarType) -> bool {
    matches!(t, ScalarType::S32 | ScalarType::S64 | ScalarType::S16)
}

/// Bit operations take untyped `b` types of the same size.
pub(crate) fn bits_of(t: ScalarType) -> ScalarType {
    match t {
        ScalarType::Pred => ScalarType::Pred,
        t => match t.bits() {
            16 => ScalarType::B16,
            32 => ScalarType::B32,
            64 => ScalarType::B64,
            _ => t,
        },
    }
}

/// The bytes a value of `t` occupies in memory and the type `ld`/`st` name it by.
pub(crate) fn memory_type(t: ScalarType) -> ScalarType {
    match t {
        ScalarType::F16 | ScalarType::Bf16 => ScalarType::B16,
        other => other,
    }
}

/// Refuses an integer literal (or constant arithmetic on literals) that `t` cannot hold, as
/// rustc does: `let big: u32 = 5000000000;` and `let m: u32 = -1;` are errors, not wrapped.
pub(crate) fn literal_fits(v: i64, t: ScalarType, span: crate::diag::SpanRange) -> DResult<()> {
    let (lo, hi): (i64, i64) = match t {
        ScalarType::U8 => (0, u8::MAX as i64),
        ScalarType::U16 => (0, u16::MAX as i64),
        ScalarType::U32 => (0, u32::MAX as i64),
        ScalarType::U64 => (0, i64::MAX),
        ScalarType::S8 => (i8::MIN as i64, i8::MAX as i64),
        ScalarType::S16 => (i16::MIN as i64, i16::MAX as i64),
        ScalarType::S32 => (i32::MIN as i64, i32::MAX as i64),
        _ => return Ok(()),
    };
    if v < 0 && lo == 0 {
        return err(
            span,
            format!(
                "`{v}` is negative, but `{}` is unsigned: use a signed type, or `{}::MAX` for all ones",
                rust_name(t),
                rust_name(t)
            ),
        );
    }
    if v < lo || v > hi {
        return err(
            span,
            format!(
                "literal out of range for `{}`: `{v}` is outside {lo}..={hi}",
                rust_name(t)
            ),
        );
    }
    Ok(())
}

pub(crate) fn wrap_int(v: i64, t: ScalarType) -> i64 {
    match t {
        ScalarType::U32 => v as u32 as i64,
        ScalarType::S32 => v as i32 as i64,
        _ => v,
    }
}

impl Lowerer<'_> {
    /// Lowers `e`; `expected` is the type the context wants, used to type literals.
    pub(crate) fn expr(&mut self, e: &Expr, expected: Option<ScalarType>) -> DResult<Value> {
        let saved = self.span;
        self.span = crate::diag::range(&e);
        let out = self.expr_inner(e, expected);
        self.span = saved;
        out
    }

    fn expr_inner(&mut self, e: &Expr, expected: Option<ScalarType>) -> DResult<Value> {
        match e {
            Expr::Lit(l) => self.literal(&l.lit),
            Expr::Path(p) => self.path(p),
            Expr::Paren(p) => self.expr(&p.expr, expected),
            Expr::Group(g) => self.expr(&g.expr, expected),
            Expr::Binary(b) => self.binary(b, expected),
            Expr::Unary(u) => self.unary(u, expected),
            Expr::Cast(c) => self.cast(c),
            Expr::Index(i) => self.index_load(i),
            Expr::Field(f) => self.field(f),
            Expr::Call(c) => self.call(c, expected),
            Expr::MethodCall(m) => self.method_call(m, expected),
            Expr::If(i) => self.if_expr(i, expected),
            Expr::Block(b) if b.label.is_none() => self.block_value(&b.block, expected),
            Expr::Unsafe(u) => err(
                crate::diag::range(&u),
                "kernels have no `unsafe` blocks: every operation is checked by the macro",
            ),
            Expr::Repeat(r) => {
                let n = self.const_eval(&r.len)?;
                if !(1..=256).contains(&n) {
                    return err(
                        crate::diag::range(&r.len),
                        "a local array holds 1 to 256 elements (it lives in registers)",
                    );
                }
                let init = self.expr(&r.expr, expected)?;
                let s = self.as_scalar(init, None, crate::diag::range(&r.expr))?;
                let elems = (0..n)
                    .map(|_| {
                        let reg = self.b.reg(s.ty);
                        self.mov(reg, s.clone());
                        reg
                    })
                    .collect();
                Ok(Value::Array { elems, elem: s.ty })
            }
            Expr::Array(a) => {
                let mut vals = Vec::new();
                for x in &a.elems {
                    vals.push((self.expr(x, expected)?, crate::diag::range(&x)));
                }
                let ty = vals
                    .iter()
                    .find_map(|(v, _)| {
                        if let Value::Scalar(s) = v {
                            Some(s.ty)
                        } else {
                            None
                        }
                    })
                    .or(expected);
                let mut elems = Vec::new();
                for (v, span) in vals {
                    let s = self.as_scalar(v, ty, span)?;
                    let reg = self.b.reg(s.ty);
                    self.mov(reg, s);
                    elems.push(reg);
                }
                let Some(first) = elems.first() else {
                    return err(
                        crate::diag::range(&a),
                        "an empty array has no use in a kernel",
                    );
                };
                let elem = first.ty;
                if let Some(bad) = elems.iter().find(|r| r.ty != elem) {
                    return err(
                        crate::diag::range(&a),
                        format!(
                            "array elements must share one type: found `{}` and `{}`",
                            rust_name(elem),
                            rust_name(bad.ty)
                        ),
                    );
                }
                Ok(Value::Array { elems, elem })
            }
            Expr::Assign(_)
            | Expr::While(_)
            | Expr::ForLoop(_)
            | Expr::Loop(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Return(_) => {
                self.stmt_expr(e)?;
                Ok(Value::Unit)
            }
            Expr::Macro(m) => err(
                crate::diag::range(&m),
                format!(
                    "macros such as `{}!` are not available in kernels",
                    m.mac
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default()
                ),
            ),
            Expr::Closure(c) => err(
                crate::diag::range(&c),
                "closures are not supported in kernels: write a `#[device]` function",
            ),
            Expr::Reference(r) => self.subslice(r),
            Expr::Tuple(t) => self.tuple_expr(t),
            Expr::Struct(s) => err(
                crate::diag::range(&s),
                "structs are not supported in kernels",
            ),
            Expr::Match(m) => err(
                crate::diag::range(&m),
                "`match` is not supported in kernels: use `if`/`else`",
            ),
            Expr::Range(r) => err(
                crate::diag::range(&r),
                "a range is only allowed as the iterator of a `for` loop",
            ),
            Expr::Let(l) => err(
                crate::diag::range(&l),
                "`if let` is not supported in kernels",
            ),
            other => err(
                crate::diag::range(&other),
                "this expression is not supported in kernels",
            ),
        }
    }

    fn literal(&mut self, lit: &syn::Lit) -> DResult<Value> {
        match lit {
            syn::Lit::Int(i) => {
                let v: i64 = match i.base10_parse::<i64>() {
                    Ok(v) => v,
                    Err(_) => i
                        .base10_parse::<u64>()
                        .map(|v| v as i64)
                        .map_err(|e| Diag::new(crate::diag::range(&i), e.to_string()))?,
                };
                match i.suffix() {
                    "" => Ok(Value::IntLit(v)),
                    s => {
                        let ty = crate::dsl_type::scalar_from_name(s).filter(|t| is_int(*t) || is_float(*t)).ok_or_else(|| {
                            Diag::new(crate::diag::range(&i), format!("`{s}` literals are not supported in kernels: use u32, i32, u64, i64, f32 or f64"))
                        })?;
                        if is_float(ty) {
                            return Ok(Value::Scalar(float_imm(v as f64, ty)));
                        }
                        Ok(Value::Scalar(Scalar {
                            op: Operand::Imm(Imm::Int(wrap_int(v, ty))),
                            ty,
                        }))
                    }
                }
            }
            syn::Lit::Float(f) => {
                let v: f64 = f
                    .base10_parse()
                    .map_err(|e| Diag::new(crate::diag::range(&f), e.to_string()))?;
                match f.suffix() {
                    "" => Ok(Value::FloatLit(v)),
                    "f32" => Ok(Value::Scalar(float_imm(v, ScalarType::F32))),
                    "f64" => Ok(Value::Scalar(float_imm(v, ScalarType::F64))),
                    s => err(
                        crate::diag::range(&f),
                        format!("`{s}` float literals are not supported: use f32 or f64"),
                    ),
                }
            }
            syn::Lit::Bool(b) => Ok(Value::Scalar(Scalar {
                op: Operand::Imm(Imm::Int(b.value as i64)),
                ty: ScalarType::Pred,
            })),
            other => err(
                crate::diag::range(&other),
                "only numeric and boolean literals are supported in kernels",
            ),
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> DResult<Value> {
        let Some(ident) = p.path.get_ident() else {
            return self.assoc_const(p);
        };
        let name = ident.to_string();
        if let Some(b) = self.lookup(&name) {
            return Ok(b.value.clone());
        }
        if let Some(c) = crate::known::module_const(&name) {
            // A `#[device] const`: bound where first named, as a `const` inside the kernel is.
            let (ty, value) = (&c.ty, &c.expr);
            let binding: syn::Stmt =
                syn::parse_quote_spanned!(ident.span()=> let #ident: #ty = #value;);
            self.stmt(&binding)?;
            if let Some(b) = self.lookup(&name) {
                return Ok(b.value.clone());
            }
        }
        if let Some(&(v, ty)) = self.spec.consts.get(&name) {
            return Ok(Value::Scalar(Scalar {
                op: Operand::Imm(Imm::Int(v)),
                ty,
            }));
        }
        err(crate::diag::range(&ident), format!("cannot find `{name}` in this kernel: kernels see their parameters, their `let` bindings, `const` items declared inside them or above them marked `#[device]`, and const generic parameters (a module-level `const` is visible once marked `#[device]`)"))
    }

    /// `f32::MAX`, `u32::MAX` and friends.
    fn assoc_const(&mut self, p: &syn::ExprPath) -> DResult<Value> {
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if segs.len() == 2 {
            let ty = self
                .spec
                .types
                .get(&segs[0])
                .copied()
                .or_else(|| crate::dsl_type::scalar_from_name(&segs[0]));
            if let Some(ty) = ty {
                let int = |v: i64| {
                    Ok(Value::Scalar(Scalar {
                        op: Operand::Imm(Imm::Int(v)),
                        ty,
                    }))
                };
                return match (ty, segs[1].as_str()) {
                    (ScalarType::U32, "MAX") => int(u32::MAX as i64),
                    (ScalarType::U32, "MIN") | (ScalarType::U64, "MIN") => int(0),
                    (ScalarType::S32, "MAX") => int(i32::MAX as i64),
                    (ScalarType::S32, "MIN") => int(i32::MIN as i64),
                    (ScalarType::U64, "MAX") => int(-1),
                    (ScalarType::S64, "MAX") => int(i64::MAX),
                    (ScalarType::S64, "MIN") => int(i64::MIN),
                    (t, "MAX") if is_float(t) => Ok(Value::Scalar(float_imm(max_of(t), t))),
                    (t, "MIN") if is_float(t) => Ok(Value::Scalar(float_imm(-max_of(t), t))),
                    (t, "INFINITY") if is_float(t) => {
                        Ok(Value::Scalar(float_imm(f64::INFINITY, t)))
                    }
                    (t, "NEG_INFINITY") if is_float(t) => {
                        Ok(Value::Scalar(float_imm(f64::NEG_INFINITY, t)))
                    }
                    // The quiet NaN the host's `NAN` is (0x7fc0_0000; 0x7fc0 as bf16).
                    (t, "NAN") if is_float(t) => Ok(Value::Scalar(float_imm(f64::NAN, t))),
                    // Elements in one 16-byte access, the widest vector load.
                    (t, "VEC") if t != ScalarType::Pred => Ok(Value::Scalar(Scalar {
                        op: Operand::Imm(Imm::Int(16 / t.bytes() as i64)),
                        ty: ScalarType::U32,
                    })),
                    (t, "EPSILON") if t == ScalarType::F32 => {
                        Ok(Value::Scalar(float_imm(f32::EPSILON as f64, t)))
                    }
                    _ => err(
                        crate::diag::range(&p),
                        format!("`{}` is not a constant kernels know", segs.join("::")),
                    ),
                };
            }
        }
        err(
            crate::diag::range(&p),
            format!("cannot find `{}` in this kernel", segs.join("::")),
        )
    }

    /// Which flexible `let` an expression names, if any.
    pub(crate) fn flex_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| self.lookup(&i.to_string()))
                .and_then(|b| b.flex),
            Expr::Paren(p) => self.flex_of(&p.expr),
            _ => None,
        }
    }

    /// Turns a value into a typed scalar, typing literals by `want`.
    pub(crate) fn as_scalar(
        &mut self,
        v: Value,
        want: Option<ScalarType>,
        span: crate::diag::SpanRange,
    ) -> DResult<Scalar> {
        match v {
            Value::Scalar(s) => Ok(s),
            Value::IntLit(i) => match want {
                None => Ok(Scalar {
                    op: Operand::Imm(Imm::Int(i)),
                    ty: ScalarType::S32,
                }),
                Some(t) if is_int(t) => {
                    literal_fits(i, t, span)?;
                    Ok(Scalar {
                        op: Operand::Imm(Imm::Int(wrap_int(i, t))),
                        ty: t,
                    })
                }
                Some(t) if is_float(t) => err(
                    span,
                    format!(
                        "expected `{}`, found an integer literal: write `{i}.0`",
                        rust_name(t)
                    ),
                ),
                Some(t) => err(
                    span,
                    format!("expected `{}`, found an integer literal", rust_name(t)),
                ),
            },
            Value::FloatLit(f) => match want {
                None => Ok(float_imm(f, ScalarType::F32)),
                Some(t) if is_float(t) => Ok(float_imm(f, t)),
                Some(t) => err(
                    span,
                    format!("expected `{}`, found a float literal", rust_name(t)),
                ),
            },
            other => err(
                span,
                format!("expected a number, found {}", other.describe()),
            ),
        }
    }

    /// Lowers `e` to a scalar of type `want` exactly (literals adapt, typed values must match).
    pub(crate) fn expr_as(&mut self, e: &Expr, want: ScalarType) -> DResult<Scalar> {
        let v = self.expr(e, Some(want))?;
        let s = self.as_scalar(v, Some(want), crate::diag::range(&e))?;
        if s.ty != want {
            if let Some(flex) = self.flex_of(e) {
                return Err(self.learn(flex, want));
            }
            if want == ScalarType::Pred {
                return err(
                    crate::diag::range(&e),
                    format!(
                        "expected `bool`, found `{}`: compare instead, e.g. `x != 0`",
                        rust_name(s.ty)
                    ),
                );
            }
            return err(crate::diag::range(&e), mismatch(want, s.ty));
        }
        Ok(s)
    }

    /// Lowers `e` to some scalar (untyped literals take `default`).
    pub(crate) fn expr_scalar(&mut self, e: &Expr, default: Option<ScalarType>) -> DResult<Scalar> {
        let v = self.expr(e, default)?;
        self.as_scalar(v, default, crate::diag::range(&e))
    }

    fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<ScalarType>) -> DResult<Value> {
        let Some((_, else_branch)) = &i.else_branch else {
            self.if_stmt(i)?;
            return Ok(Value::Unit);
        };
        let yields = block_yields(&i.then_branch);
        if !yields {
            self.if_stmt(i)?;
            return Ok(Value::Unit);
        }
        let cond = self.expr_as(&i.cond, ScalarType::Pred)?;
        if let Some(k) = cond.const_int() {
            // Known at build time: only the arm taken is lowered, as in `if_stmt`.
            return if k != 0 {
                self.block_value(&i.then_branch, expected)
            } else {
                self.expr(else_branch, expected)
            };
        }
        let cond = self.materialize(&cond);
        if i.then_branch.stmts.len() == 1
            && self.is_pure_tail(&i.then_branch)
            && self.is_pure_else(else_branch)
        {
            // Both arms are side-effect free: compute both and select.
            let a = self.block_value(&i.then_branch, expected)?;
            let b = self.expr(else_branch, expected)?;
            if matches!(a, Value::Tuple(_)) {
                return self.select_tuple(&cond, a, b, crate::diag::range(&else_branch));
            }
            let a_ty = if let Value::Scalar(s) = &a {
                Some(s.ty)
            } else {
                None
            };
            let b_ty = if let Value::Scalar(s) = &b {
                Some(s.ty)
            } else {
                None
            };
            let ty = a_ty.or(b_ty).or(expected);
            let x = self.as_scalar(a, ty, crate::diag::range(&i.then_branch))?;
            let y = self.as_scalar(b, Some(x.ty), crate::diag::range(&else_branch))?;
            let y = self.check_type(y, x.ty, crate::diag::range(&else_branch))?;
            let d = self.b.reg(x.ty);
            let (xa, ya) = (self.materialize(&x), self.materialize(&y));
            self.inst(
                Op::Selp { ty: x.ty },
                vec![d.into()],
                vec![xa.into(), ya.into(), cond.into()],
            );
            return Ok(Value::Scalar(Scalar::reg(d)));
        }
        self.b.open_if(cond);
        let a = self.block_value(&i.then_branch, expected)?;
        if matches!(a, Value::Tuple(_)) {
            let d = self.tuple_place(a, crate::diag::range(&i.then_branch))?;
            self.b.open_else();
            let b = self.expr(else_branch, None)?;
            self.tuple_assign(&d, b, crate::diag::range(&else_branch))?;
            self.b.close();
            return Ok(d);
        }
        let a = self.as_scalar(a, expected, crate::diag::range(&i.then_branch))?;
        let d = self.b.reg(a.ty);
        self.mov(d, a);
        self.b.open_else();
        let b = self.expr(else_branch, Some(d.ty))?;
        let b = self.as_scalar(b, Some(d.ty), crate::diag::range(&else_branch))?;
        let b = self.check_type(b, d.ty, crate::diag::range(&else_branch))?;
        self.mov(d, b);
        self.b.close();
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    /// Lowers a block; its tail expression (if any) is its value.
    pub(crate) fn block_value(
        &mut self,
        block: &syn::Block,
        expected: Option<ScalarType>,
    ) -> DResult<Value> {
        self.push_scope();
        let out = self.block_inner(block, expected);
        self.pop_scope();
        out
    }

    fn block_inner(&mut self, block: &syn::Block, expected: Option<ScalarType>) -> DResult<Value> {
        let n = block.stmts.len();
        for (k, s) in block.stmts.iter().enumerate() {
            if k + 1 == n {
                if let syn::Stmt::Expr(e, None) = s {
                    return self.expr(e, expected);
                }
            }
            self.stmt(s)?;
        }
        Ok(Value::Unit)
    }
}

pub(crate) enum OperandPair {
    IntLits(i64, i64),
    FloatLits(f64, f64),
    Typed(Scalar, Scalar),
}

pub(crate) fn mismatch(want: ScalarType, found: ScalarType) -> String {
    format!(
        "mismatched types: expected `{}`, found `{}`; kernels never convert implicitly: add `as {}`",
        rust_name(want),
        rust_name(found),
        rust_name(want)
    )
}

pub(crate) fn float_imm(v: f64, ty: ScalarType) -> Scalar {
    let imm = if ty == ScalarType::F64 {
        Imm::F64Bits(v.to_bits())
    } else {
        Imm::F32Bits((v as f32).to_bits())
    };
    Scalar {
        op: Operand::Imm(imm),
        ty,
    }
}

pub(crate) fn max_of(t: ScalarType) -> f64 {
    match t {
        ScalarType::F64 => f64::MAX,
        ScalarType::F16 => 65504.0,
        ScalarType::Bf16 => 3.389_531_389_251_535_5e38,
        _ => f32::MAX as f64,
    }
}

pub(crate) fn op_name(op: BinOp) -> String {
    quote::ToTokens::to_token_stream(&op).to_string()
}

pub(crate) fn fold_int(op: BinOp, a: i64, b: i64, span: crate::diag::SpanRange) -> DResult<Value> {
    use BinOp::*;
    let int = |v: i64| Ok(Value::IntLit(v));
    let boolean = |v: bool| {
        Ok(Value::Scalar(Scalar {
            op: Operand::Imm(Imm::Int(v as i64)),
            ty: ScalarType::Pred,
        }))
    };
    match op {
        Add(_) => int(a.wrapping_add(b)),
        Sub(_) => int(a.wrapping_sub(b)),
        Mul(_) => int(a.wrapping_mul(b)),
        Div(_) | Rem(_) if b == 0 => err(span, "division by zero in a constant expression"),
        Div(_) => int(a / b),
        Rem(_) => int(a % b),
        BitAnd(_) => int(a & b),
        BitOr(_) => int(a | b),
        BitXor(_) => int(a ^ b),
        Shl(_) => int(a.wrapping_shl(b as u32)),
        Shr(_) => int(a.wrapping_shr(b as u32)),
        Eq(_) => boolean(a == b),
        Ne(_) => boolean(a != b),
        Lt(_) => boolean(a < b),
        Le(_) => boolean(a <= b),
        Gt(_) => boolean(a > b),
        Ge(_) => boolean(a >= b),
        _ => err(span, "this operator is not defined on integers"),
    }
}

pub(crate) fn fold_float(
    op: BinOp,
    a: f64,
    b: f64,
    span: crate::diag::SpanRange,
) -> DResult<Value> {
    use BinOp::*;
    let boolean = |v: bool| {
        Ok(Value::Scalar(Scalar {
            op: Operand::Imm(Imm::Int(v as i64)),
            ty: ScalarType::Pred,
        }))
    };
    match op {
        Add(_) => Ok(Value::FloatLit(a + b)),
        Sub(_) => Ok(Value::FloatLit(a - b)),
        Mul(_) => Ok(Value::FloatLit(a * b)),
        Div(_) => Ok(Value::FloatLit(a / b)),
        Eq(_) => boolean(a == b),
        Ne(_) => boolean(a != b),
        Lt(_) => boolean(a < b),
        Le(_) => boolean(a <= b),
        Gt(_) => boolean(a > b),
        Ge(_) => boolean(a >= b),
        _ => err(span, "this operator is not defined on floats"),
    }
}

fn block_yields(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(syn::Stmt::Expr(e, None)) if !matches!(e, Expr::If(_) | Expr::While(_) | Expr::ForLoop(_) | Expr::Loop(_) | Expr::Assign(_)) || matches!(b.stmts.last(), Some(syn::Stmt::Expr(Expr::If(i), None)) if i.else_branch.is_some()))
}

impl Lowerer<'_> {
    /// Whether `e` may be evaluated where the program would not have evaluated it: no store,
    /// no barrier, no memory read (a guarded load must stay guarded). It knows the bindings:
    /// an element of a register array, and the scalar math intrinsics, are pure; a slice
    /// element is a read.
    pub(crate) fn is_pure(&self, e: &Expr) -> bool {
        match e {
            Expr::Lit(_) | Expr::Path(_) => true,
            Expr::Paren(p) => self.is_pure(&p.expr),
            Expr::Group(g) => self.is_pure(&g.expr),
            Expr::Binary(b) => {
                !is_assign_op(&b.op) && self.is_pure(&b.left) && self.is_pure(&b.right)
            }
            Expr::Unary(u) => self.is_pure(&u.expr),
            Expr::Cast(c) => self.is_pure(&c.expr),
            Expr::Field(f) => self.is_pure(&f.base),
            Expr::Index(ix) => self.is_local_array(&ix.expr) && self.is_pure(&ix.index),
            Expr::Call(c) => {
                let named = match &*c.func {
                    Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                    _ => None,
                };
                named.is_some_and(|n| is_pure_intrinsic(&n))
                    && c.args.iter().all(|a| self.is_pure(a))
            }
            Expr::MethodCall(m) => {
                is_pure_intrinsic(&m.method.to_string())
                    && self.is_pure(&m.receiver)
                    && m.args.iter().all(|a| self.is_pure(a))
            }
            _ => false,
        }
    }

    /// Whether `e` names a register array in scope.
    fn is_local_array(&self, e: &Expr) -> bool {
        let Expr::Path(p) = e else { return false };
        p.path.get_ident().is_some_and(|name| {
            matches!(self.lookup(&name.to_string()), Some(b) if matches!(b.value, Value::Array { .. }))
        })
    }

    fn is_pure_tail(&self, b: &syn::Block) -> bool {
        matches!(b.stmts.last(), Some(syn::Stmt::Expr(e, None)) if self.is_pure(e))
    }

    fn is_pure_else(&self, e: &Expr) -> bool {
        match e {
            Expr::Block(b) => b.block.stmts.len() == 1 && self.is_pure_tail(&b.block),
            _ => false,
        }
    }
}

/// `+=` and the other compound assignments.
fn is_assign_op(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The index builtins and the scalar math of the intrinsics table (a chain of instructions
/// from scalars to a scalar), which read no memory and write nothing.
fn is_pure_intrinsic(name: &str) -> bool {
    use kernel_dsl::intrinsics::{find, Lowering, Ty};
    matches!(
        name,
        "thread_idx"
            | "block_idx"
            | "block_dim"
            | "grid_dim"
            | "lane_id"
            | "min"
            | "max"
            | "mul_add"
    ) || find(name)
        .is_some_and(|i| matches!(i.lowering, Lowering::Chain(_)) && !matches!(i.result, Ty::Unit))
}
