//! Expressions: literals, names, operators, casts, indexing, `if` as a value, blocks.

use super::value::{Binding, Dim3Kind, Scalar, SharedRef, SliceRef, Value};
use super::Lowerer;
use crate::diag::{err, DResult, Diag};
use crate::dsl_type::{rust_name, scalar_of};
use kernel_dsl::builder::default_cvt_rounding;
use kernel_dsl::ir::{AddrBase, Dim, Imm, Operand, SpecialReg};
use kernel_dsl::op::{Cmp, DivMode, MulMode, Op, Rounding};
use kernel_dsl::{ScalarType, StateSpace};
use syn::{BinOp, Expr, UnOp};

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

fn is_signed(t: ScalarType) -> bool {
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

fn wrap_int(v: i64, t: ScalarType) -> i64 {
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
            Expr::Reference(r) => err(
                crate::diag::range(&r),
                "references are not supported inside kernels: pass slices and arrays by name",
            ),
            Expr::Tuple(t) => err(
                crate::diag::range(&t),
                "tuples are not supported in kernels",
            ),
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

    // ----- literals and names ----------------------------------------------------------

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
        if let Some(&(v, ty)) = self.spec.consts.get(&name) {
            return Ok(Value::Scalar(Scalar {
                op: Operand::Imm(Imm::Int(v)),
                ty,
            }));
        }
        err(crate::diag::range(&ident), format!("cannot find `{name}` in this kernel: kernels see their parameters, their `let` bindings and const generic parameters"))
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

    // ----- typing helpers --------------------------------------------------------------

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
                Some(t) if is_int(t) => Ok(Scalar {
                    op: Operand::Imm(Imm::Int(wrap_int(i, t))),
                    ty: t,
                }),
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

    /// Lowers both operands of a binary operator to one common type.
    fn operands(
        &mut self,
        l: &Expr,
        r: &Expr,
        expected: Option<ScalarType>,
    ) -> DResult<OperandPair> {
        let lv = self.expr(l, expected)?;
        self.operands_from(lv, l, r, expected)
    }

    /// [`Self::operands`] with the left operand already lowered.
    fn operands_from(
        &mut self,
        lv: Value,
        l: &Expr,
        r: &Expr,
        expected: Option<ScalarType>,
    ) -> DResult<OperandPair> {
        let lty = if let Value::Scalar(s) = &lv {
            Some(s.ty)
        } else {
            None
        };
        let rv = self.expr(r, lty.or(expected))?;
        let rty = if let Value::Scalar(s) = &rv {
            Some(s.ty)
        } else {
            None
        };
        match (&lv, &rv) {
            (Value::IntLit(a), Value::IntLit(b)) if expected.is_none_or(is_int) => {
                return Ok(OperandPair::IntLits(*a, *b))
            }
            (Value::FloatLit(a), Value::FloatLit(b)) if expected.is_none_or(is_float) => {
                return Ok(OperandPair::FloatLits(*a, *b))
            }
            _ => {}
        }
        let ty = lty.or(rty).or(expected);
        let a = self.as_scalar(lv, ty, crate::diag::range(&l))?;
        let b = self.as_scalar(rv, Some(a.ty), crate::diag::range(&r))?;
        if a.ty != b.ty {
            if let (Some(flex), None) = (self.flex_of(l), self.flex_of(r)) {
                return Err(self.learn(flex, b.ty));
            }
            if let Some(flex) = self.flex_of(r) {
                return Err(self.learn(flex, a.ty));
            }
            return err(
                crate::diag::range(&r),
                format!(
                    "mismatched types: the left operand is `{}` but this is `{}`; kernels never convert implicitly: add `as {}`",
                    rust_name(a.ty),
                    rust_name(b.ty),
                    rust_name(a.ty)
                ),
            );
        }
        Ok(OperandPair::Typed(a, b))
    }

    /// A register or immediate usable as an arithmetic source (16-bit float immediates and
    /// predicates become registers).
    pub(crate) fn src(&mut self, s: &Scalar) -> Operand {
        match (&s.op, s.ty) {
            (Operand::Imm(_), ScalarType::F16 | ScalarType::Bf16 | ScalarType::Pred) => {
                self.materialize(s).into()
            }
            _ => s.op.clone(),
        }
    }

    // ----- operators -------------------------------------------------------------------

    fn binary(&mut self, b: &syn::ExprBinary, expected: Option<ScalarType>) -> DResult<Value> {
        use BinOp::*;
        match b.op {
            And(_) | Or(_) => return self.logical(b),
            Shl(_) | Shr(_) => return self.shift(b, expected),
            _ => {}
        }
        let is_cmp = matches!(b.op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_));
        if matches!(b.op, Add(_)) {
            if let Some(v) = self.multiply_add(b, expected)? {
                return Ok(v);
            }
        }
        let pair = self.operands(&b.left, &b.right, if is_cmp { None } else { expected })?;
        self.finish_binary(b.op, pair, crate::diag::range(&b))
    }

    /// `a * b + c` on integers as one `mad.lo` (the same low bits as `mul.lo` then `add`).
    /// Returns `None` when the left operand is not a product, without lowering anything.
    fn multiply_add(
        &mut self,
        b: &syn::ExprBinary,
        expected: Option<ScalarType>,
    ) -> DResult<Option<Value>> {
        let mut left = &*b.left;
        while let Expr::Paren(p) = left {
            left = &p.expr;
        }
        let Expr::Binary(m) = left else {
            return Ok(None);
        };
        if !matches!(m.op, BinOp::Mul(_)) {
            return Ok(None);
        }
        let pair = self.operands(&m.left, &m.right, expected)?;
        let (x, y) = match pair {
            OperandPair::Typed(x, y)
                if is_int(x.ty) && (x.const_int().is_none() || y.const_int().is_none()) =>
            {
                (x, y)
            }
            other => {
                let product = self.finish_binary(m.op, other, crate::diag::range(&m))?;
                let pair = self.operands_from(product, &b.left, &b.right, expected)?;
                return self
                    .finish_binary(b.op, pair, crate::diag::range(&b))
                    .map(Some);
            }
        };
        let c = self.expr(&b.right, Some(x.ty))?;
        let c = self.as_scalar(c, Some(x.ty), crate::diag::range(&b.right))?;
        if c.ty != x.ty {
            if let Some(flex) = self.flex_of(&b.right) {
                return Err(self.learn(flex, x.ty));
            }
            if let Some(flex) = self.flex_of(&m.left).or(self.flex_of(&m.right)) {
                return Err(self.learn(flex, c.ty));
            }
            return err(
                crate::diag::range(&b.right),
                format!(
                    "mismatched types: the left operand is `{}` but this is `{}`; kernels never convert implicitly: add `as {}`",
                    rust_name(x.ty),
                    rust_name(c.ty),
                    rust_name(x.ty)
                ),
            );
        }
        let a = self.materialize(&x);
        let (bb, cc) = (self.src(&y), self.src(&c));
        let d = self.b.reg(x.ty);
        self.span = crate::diag::range(&b);
        self.inst(
            Op::Mad {
                ty: x.ty,
                mode: MulMode::Lo,
            },
            vec![d.into()],
            vec![a.into(), bb, cc],
        );
        Ok(Some(Value::Scalar(Scalar::reg(d))))
    }

    /// Folds or emits a binary operator whose operands are lowered.
    fn finish_binary(
        &mut self,
        op: BinOp,
        pair: OperandPair,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        use BinOp::*;
        let is_cmp = matches!(op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_));
        let (x, y) = match pair {
            OperandPair::IntLits(x, y) => return fold_int(op, x, y, span),
            OperandPair::FloatLits(x, y) => return fold_float(op, x, y, span),
            OperandPair::Typed(x, y) => (x, y),
        };
        let ty = x.ty;
        if let (Some(a), Some(c)) = (x.const_int(), y.const_int()) {
            if is_int(ty) {
                if let Ok(Value::IntLit(v)) = fold_int(op, a, c, span) {
                    return Ok(Value::Scalar(Scalar {
                        op: Operand::Imm(Imm::Int(wrap_int(v, ty))),
                        ty,
                    }));
                }
            }
        }
        if is_cmp {
            return self.compare(op, x, y, span);
        }
        let name = op_name(op);
        let inst = self.arith_op(op, ty, span).map_err(|m| {
            Diag::new(
                span,
                m.unwrap_or_else(|| format!("`{name}` is not defined for `{}`", rust_name(ty))),
            )
        })?;
        let a = self.src(&x);
        let c = self.src(&y);
        let a = match a {
            Operand::Imm(_) => self.materialize(&x).into(),
            other => other,
        };
        let d = self.b.reg(ty);
        self.span = span;
        self.inst(inst, vec![d.into()], vec![a, c]);
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    /// The instruction for an arithmetic or bit operator on `ty`; `Err(Some(msg))` explains.
    pub(crate) fn arith_op(
        &self,
        op: BinOp,
        ty: ScalarType,
        _span: crate::diag::SpanRange,
    ) -> Result<Op, Option<String>> {
        use BinOp::*;
        let float = is_float(ty);
        let rnd = float.then_some(Rounding::Rn);
        Ok(match op {
            Add(_) | AddAssign(_) if ty != ScalarType::Pred => Op::Add { ty, rnd, ftz: false, sat: false },
            Sub(_) | SubAssign(_) if ty != ScalarType::Pred => Op::Sub { ty, rnd, ftz: false, sat: false },
            Mul(_) | MulAssign(_) if ty != ScalarType::Pred => {
                Op::Mul { ty, mode: (!float).then_some(MulMode::Lo), rnd, ftz: false, sat: false }
            }
            Div(_) | DivAssign(_) if is_int(ty) => Op::Div { ty, mode: DivMode::Int, ftz: false },
            Div(_) | DivAssign(_) if matches!(ty, ScalarType::F32 | ScalarType::F64) => Op::Div { ty, mode: DivMode::Ieee(Rounding::Rn), ftz: false },
            Div(_) | DivAssign(_) if float => {
                return Err(Some(format!("`/` on `{}` has no PTX instruction: convert to f32 with `as f32`, divide, and convert back", rust_name(ty))))
            }
            Rem(_) | RemAssign(_) if is_int(ty) => Op::Rem { ty },
            Rem(_) | RemAssign(_) => return Err(Some(format!("`%` is defined on integers only, not `{}`", rust_name(ty)))),
            BitAnd(_) | BitAndAssign(_) if is_int(ty) || ty == ScalarType::Pred => Op::And { ty: bits_of(ty) },
            BitOr(_) | BitOrAssign(_) if is_int(ty) || ty == ScalarType::Pred => Op::Or { ty: bits_of(ty) },
            BitXor(_) | BitXorAssign(_) if is_int(ty) || ty == ScalarType::Pred => Op::Xor { ty: bits_of(ty) },
            _ => return Err(None),
        })
    }

    pub(crate) fn compare(
        &mut self,
        op: BinOp,
        x: Scalar,
        y: Scalar,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        use BinOp::*;
        let ty = x.ty;
        let p = self.b.reg(ScalarType::Pred);
        if ty == ScalarType::Pred {
            let (a, c) = (self.src(&x), self.src(&y));
            match op {
                Ne(_) => self.inst(
                    Op::Xor {
                        ty: ScalarType::Pred,
                    },
                    vec![p.into()],
                    vec![a, c],
                ),
                Eq(_) => {
                    let t = self.b.reg(ScalarType::Pred);
                    self.inst(
                        Op::Xor {
                            ty: ScalarType::Pred,
                        },
                        vec![t.into()],
                        vec![a, c],
                    );
                    self.inst(
                        Op::Not {
                            ty: ScalarType::Pred,
                        },
                        vec![p.into()],
                        vec![t.into()],
                    );
                }
                _ => return err(span, "booleans compare only with `==` and `!=`"),
            }
            return Ok(Value::Scalar(Scalar::reg(p)));
        }
        let cmp = match op {
            Eq(_) => Cmp::Eq,
            Ne(_) => Cmp::Ne,
            Lt(_) => Cmp::Lt,
            Le(_) => Cmp::Le,
            Gt(_) => Cmp::Gt,
            _ => Cmp::Ge,
        };
        let a = match self.src(&x) {
            Operand::Imm(_) => self.materialize(&x).into(),
            other => other,
        };
        let c = self.src(&y);
        let _ = span;
        self.inst(
            Op::Setp {
                cmp,
                ty,
                ftz: false,
            },
            vec![p.into()],
            vec![a, c],
        );
        Ok(Value::Scalar(Scalar::reg(p)))
    }

    /// `&&` and `||`, short-circuiting when the right side could touch memory.
    fn logical(&mut self, b: &syn::ExprBinary) -> DResult<Value> {
        let is_and = matches!(b.op, BinOp::And(_));
        let l = self.expr_as(&b.left, ScalarType::Pred)?;
        if !has_effects(&b.right) {
            let r = self.expr_as(&b.right, ScalarType::Pred)?;
            let (x, y) = (self.src(&l), self.src(&r));
            let d = self.b.reg(ScalarType::Pred);
            let op = if is_and {
                Op::And {
                    ty: ScalarType::Pred,
                }
            } else {
                Op::Or {
                    ty: ScalarType::Pred,
                }
            };
            self.inst(op, vec![d.into()], vec![x, y]);
            return Ok(Value::Scalar(Scalar::reg(d)));
        }
        let d = self.b.reg(ScalarType::Pred);
        self.mov(d, l);
        let test = if is_and {
            d
        } else {
            let n = self.b.reg(ScalarType::Pred);
            self.inst(
                Op::Not {
                    ty: ScalarType::Pred,
                },
                vec![n.into()],
                vec![d.into()],
            );
            n
        };
        self.b.open_if(test);
        self.push_scope();
        let r = self.expr_as(&b.right, ScalarType::Pred);
        self.pop_scope();
        let r = r?;
        self.mov(d, r);
        self.b.close();
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    fn shift(&mut self, b: &syn::ExprBinary, expected: Option<ScalarType>) -> DResult<Value> {
        let lv = self.expr(&b.left, expected)?;
        let rv = self.expr(&b.right, None)?;
        if let (Value::IntLit(x), Value::IntLit(y)) = (&lv, &rv) {
            return fold_int(b.op, *x, *y, crate::diag::range(&b));
        }
        let x = self.as_scalar(lv, expected, crate::diag::range(&b.left))?;
        if !is_int(x.ty) {
            return err(
                crate::diag::range(&b.left),
                format!(
                    "shifts are defined on integers only, not `{}`",
                    rust_name(x.ty)
                ),
            );
        }
        let y = self.as_scalar(rv, Some(ScalarType::U32), crate::diag::range(&b.right))?;
        if !is_int(y.ty) {
            return err(
                crate::diag::range(&b.right),
                "a shift amount must be an integer",
            );
        }
        let amount = match (&y.op, y.ty) {
            (Operand::Imm(_), _) | (_, ScalarType::U32) => y.op.clone(),
            (_, ScalarType::S32) => {
                let r = self.b.reg(ScalarType::U32);
                self.mov(
                    r,
                    Scalar {
                        op: y.op.clone(),
                        ty: ScalarType::U32,
                    },
                );
                r.into()
            }
            _ => self.convert(y, ScalarType::U32)?.op,
        };
        let a = self.materialize(&x);
        let d = self.b.reg(x.ty);
        let op = if matches!(b.op, BinOp::Shl(_)) {
            Op::Shl { ty: bits_of(x.ty) }
        } else {
            Op::Shr { ty: x.ty }
        };
        self.inst(op, vec![d.into()], vec![a.into(), amount]);
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    fn unary(&mut self, u: &syn::ExprUnary, expected: Option<ScalarType>) -> DResult<Value> {
        match u.op {
            UnOp::Neg(_) => {
                let v = self.expr(&u.expr, expected)?;
                match v {
                    Value::IntLit(i) => return Ok(Value::IntLit(-i)),
                    Value::FloatLit(f) => return Ok(Value::FloatLit(-f)),
                    _ => {}
                }
                let s = self.as_scalar(v, expected, crate::diag::range(&u.expr))?;
                if let Operand::Imm(imm) = s.op {
                    match imm {
                        Imm::Int(i) if is_signed(s.ty) => {
                            return Ok(Value::Scalar(Scalar {
                                op: Operand::Imm(Imm::Int(wrap_int(-i, s.ty))),
                                ty: s.ty,
                            }))
                        }
                        Imm::F32Bits(bits) => {
                            return Ok(Value::Scalar(Scalar {
                                op: Operand::Imm(Imm::F32Bits(bits ^ 0x8000_0000)),
                                ty: s.ty,
                            }))
                        }
                        Imm::F64Bits(bits) => {
                            return Ok(Value::Scalar(Scalar {
                                op: Operand::Imm(Imm::F64Bits(bits ^ (1 << 63))),
                                ty: s.ty,
                            }))
                        }
                        _ => {}
                    }
                }
                if !(is_signed(s.ty) || is_float(s.ty)) {
                    return err(
                        crate::diag::range(&u),
                        format!("cannot negate `{}`: it is unsigned", rust_name(s.ty)),
                    );
                }
                let a = self.materialize(&s);
                let d = self.b.reg(s.ty);
                self.inst(
                    Op::Neg {
                        ty: s.ty,
                        ftz: false,
                    },
                    vec![d.into()],
                    vec![a.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            UnOp::Not(_) => {
                let s = self.expr_scalar(&u.expr, expected)?;
                if !(is_int(s.ty) || s.ty == ScalarType::Pred) {
                    return err(
                        crate::diag::range(&u),
                        format!(
                            "`!` is defined on integers and `bool`, not `{}`",
                            rust_name(s.ty)
                        ),
                    );
                }
                let a = self.materialize(&s);
                let d = self.b.reg(s.ty);
                self.inst(
                    Op::Not { ty: bits_of(s.ty) },
                    vec![d.into()],
                    vec![a.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            _ => err(
                crate::diag::range(&u),
                "dereferencing is not supported in kernels: index slices with `x[i]`",
            ),
        }
    }

    // ----- casts -------------------------------------------------------------------------

    fn cast(&mut self, c: &syn::ExprCast) -> DResult<Value> {
        let to = scalar_of(&c.ty, &self.spec.types)?;
        let v = self.expr(&c.expr, None)?;
        let s = match v {
            Value::IntLit(i) if is_float(to) => return Ok(Value::Scalar(float_imm(i as f64, to))),
            Value::IntLit(i) if is_int(to) => {
                return Ok(Value::Scalar(Scalar {
                    op: Operand::Imm(Imm::Int(wrap_int(i, to))),
                    ty: to,
                }))
            }
            Value::FloatLit(f) if is_float(to) => return Ok(Value::Scalar(float_imm(f, to))),
            other => self.as_scalar(other, None, crate::diag::range(&c.expr))?,
        };
        if let (Some(i), true) = (s.const_int(), is_int(to) && is_int(s.ty)) {
            return Ok(Value::Scalar(Scalar {
                op: Operand::Imm(Imm::Int(wrap_int(i, to))),
                ty: to,
            }));
        }
        Ok(Value::Scalar(self.convert(s, to)?))
    }

    /// Converts a scalar to `to` with Rust `as` semantics.
    pub(crate) fn convert(&mut self, s: Scalar, to: ScalarType) -> DResult<Scalar> {
        let from = s.ty;
        if from == to {
            return Ok(s);
        }
        if to == ScalarType::Pred {
            return err(
                self.span,
                format!(
                    "`as bool` is not allowed: compare instead, e.g. `x != 0` for a `{}`",
                    rust_name(from)
                ),
            );
        }
        let src = self.materialize(&s);
        if from == ScalarType::Pred {
            let d = self.b.reg(to);
            let (one, zero) = if is_float(to) {
                (float_imm(1.0, to), float_imm(0.0, to))
            } else {
                (
                    Scalar {
                        op: Operand::Imm(Imm::Int(1)),
                        ty: to,
                    },
                    Scalar {
                        op: Operand::Imm(Imm::Int(0)),
                        ty: to,
                    },
                )
            };
            let (one, zero) = (self.src(&one), self.src(&zero));
            self.inst(
                Op::Selp { ty: to },
                vec![d.into()],
                vec![one, zero, src.into()],
            );
            return Ok(Scalar::reg(d));
        }
        if is_int(from) && is_int(to) && from.bits() == to.bits() {
            let d = self.b.reg(to);
            self.inst(
                Op::Mov { ty: bits_of(to) },
                vec![d.into()],
                vec![src.into()],
            );
            return Ok(Scalar::reg(d));
        }
        if from == ScalarType::Bf16 {
            // bf16 is the upper half of an f32: widen by shifting the bits, which every
            // target can do (`cvt.f32.bf16` needs sm_90).
            let bits = self.b.reg(ScalarType::U16);
            self.inst(
                Op::Mov {
                    ty: ScalarType::B16,
                },
                vec![bits.into()],
                vec![src.into()],
            );
            let wide = self.b.reg(ScalarType::U32);
            self.inst(
                Op::Cvt {
                    dst: ScalarType::U32,
                    src: ScalarType::U16,
                    rnd: None,
                    ftz: false,
                    sat: false,
                    relu: false,
                },
                vec![wide.into()],
                vec![bits.into()],
            );
            let shifted = self.b.reg(ScalarType::U32);
            self.inst(
                Op::Shl {
                    ty: ScalarType::B32,
                },
                vec![shifted.into()],
                vec![wide.into(), Operand::Imm(Imm::Int(16))],
            );
            let f = self.b.reg(ScalarType::F32);
            self.inst(
                Op::Mov {
                    ty: ScalarType::B32,
                },
                vec![f.into()],
                vec![shifted.into()],
            );
            return self.convert(Scalar::reg(f), to);
        }
        if (to == ScalarType::Bf16 && from != ScalarType::F32)
            || (to == ScalarType::F16 && from == ScalarType::Bf16)
        {
            let f = self.convert(Scalar::reg(src), ScalarType::F32)?;
            return self.convert(f, to);
        }
        let d = self.b.reg(to);
        let rnd = default_cvt_rounding(to, from);
        self.inst(
            Op::Cvt {
                dst: to,
                src: from,
                rnd,
                ftz: false,
                sat: false,
                relu: false,
            },
            vec![d.into()],
            vec![src.into()],
        );
        Ok(Scalar::reg(d))
    }

    // ----- places ------------------------------------------------------------------------

    fn field(&mut self, f: &syn::ExprField) -> DResult<Value> {
        let base = self.expr(&f.base, None)?;
        let Value::Dim3(kind) = base else {
            return err(
                crate::diag::range(&f),
                format!("{} has no fields", base.describe()),
            );
        };
        let dim = match &f.member {
            syn::Member::Named(n) if n == "x" => Dim::X,
            syn::Member::Named(n) if n == "y" => Dim::Y,
            syn::Member::Named(n) if n == "z" => Dim::Z,
            other => {
                return err(
                    crate::diag::range(&other),
                    "a `Dim3` has fields `x`, `y` and `z`",
                )
            }
        };
        let special = match kind {
            Dim3Kind::ThreadIdx => SpecialReg::Tid(dim),
            Dim3Kind::BlockIdx => SpecialReg::Ctaid(dim),
            Dim3Kind::BlockDim => SpecialReg::Ntid(dim),
            Dim3Kind::GridDim => SpecialReg::Nctaid(dim),
        };
        Ok(Value::Scalar(self.special(special)))
    }

    pub(crate) fn special(&mut self, s: SpecialReg) -> Scalar {
        let r = self.b.reg(s.ty());
        self.inst(
            Op::Mov { ty: s.ty() },
            vec![r.into()],
            vec![Operand::Special(s)],
        );
        Scalar::reg(r)
    }

    /// Lowers an index expression to an integer scalar.
    pub(crate) fn index_scalar(&mut self, e: &Expr) -> DResult<Scalar> {
        let s = self.expr_scalar(e, Some(ScalarType::U32))?;
        if !is_int(s.ty) {
            return err(
                crate::diag::range(&e),
                format!(
                    "an index must be an integer (u32, i32 or u64), found `{}`",
                    rust_name(s.ty)
                ),
            );
        }
        Ok(s)
    }

    /// The 64-bit global address of element `idx` of a slice (or the base and a constant
    /// byte offset).
    pub(crate) fn global_address(&mut self, s: &SliceRef, idx: &Scalar) -> DResult<Operand> {
        let size = s.elem.bytes() as i64;
        if let Some(k) = idx.const_int() {
            return Ok(Operand::Addr {
                base: AddrBase::Reg(s.base),
                offset: k * size,
            });
        }
        let i = self.materialize(idx);
        let off = self.b.reg(ScalarType::U64);
        match idx.ty {
            ScalarType::U32 | ScalarType::S32 => {
                let op = Op::Mul {
                    ty: idx.ty,
                    mode: Some(MulMode::Wide),
                    rnd: None,
                    ftz: false,
                    sat: false,
                };
                let d = if idx.ty == ScalarType::S32 {
                    self.b.reg(ScalarType::S64)
                } else {
                    off
                };
                self.inst(
                    op,
                    vec![d.into()],
                    vec![i.into(), Operand::Imm(Imm::Int(size))],
                );
                if d != off {
                    self.inst(
                        Op::Mov {
                            ty: ScalarType::B64,
                        },
                        vec![off.into()],
                        vec![d.into()],
                    );
                }
            }
            t => {
                self.inst(
                    Op::Mul {
                        ty: t,
                        mode: Some(MulMode::Lo),
                        rnd: None,
                        ftz: false,
                        sat: false,
                    },
                    vec![off.into()],
                    vec![i.into(), Operand::Imm(Imm::Int(size))],
                );
            }
        }
        let addr = self.b.reg(ScalarType::U64);
        self.inst(
            Op::Add {
                ty: ScalarType::U64,
                rnd: None,
                ftz: false,
                sat: false,
            },
            vec![addr.into()],
            vec![s.base.into(), off.into()],
        );
        Ok(Operand::Addr {
            base: AddrBase::Reg(addr),
            offset: 0,
        })
    }

    /// The shared-window address of element `idx` of a shared array.
    pub(crate) fn shared_address(
        &mut self,
        a: &SharedRef,
        idx: &Scalar,
        span: crate::diag::SpanRange,
    ) -> DResult<Operand> {
        let size = a.elem.bytes() as i64;
        if let Some(k) = idx.const_int() {
            if let Some(len) = a.len {
                if k < 0 || k >= len as i64 {
                    return err(
                        span,
                        format!("index {k} is out of bounds for a shared array of {len} elements"),
                    );
                }
            }
            return Ok(Operand::Addr {
                base: AddrBase::Symbol(a.symbol.clone()),
                offset: k * size,
            });
        }
        let idx = match idx.ty {
            ScalarType::U32 => idx.clone(),
            ScalarType::S32 => {
                let r = self.b.reg(ScalarType::U32);
                self.mov(
                    r,
                    Scalar {
                        op: idx.op.clone(),
                        ty: ScalarType::U32,
                    },
                );
                Scalar::reg(r)
            }
            other => {
                return err(
                    span,
                    format!(
                        "shared memory is indexed by `u32`, found `{}`: add `as u32`",
                        rust_name(other)
                    ),
                )
            }
        };
        let base = self.b.reg(ScalarType::U32);
        self.inst(
            Op::Mov {
                ty: ScalarType::U32,
            },
            vec![base.into()],
            vec![Operand::Symbol(a.symbol.clone())],
        );
        let i = self.materialize(&idx);
        let addr = self.b.reg(ScalarType::U32);
        self.inst(
            Op::Mad {
                ty: ScalarType::U32,
                mode: MulMode::Lo,
            },
            vec![addr.into()],
            vec![i.into(), Operand::Imm(Imm::Int(size)), base.into()],
        );
        Ok(Operand::Addr {
            base: AddrBase::Reg(addr),
            offset: 0,
        })
    }

    /// The element register of a local array at a constant index.
    pub(crate) fn array_elem(
        &mut self,
        elems: &[kernel_dsl::ir::Reg],
        index: &Expr,
    ) -> DResult<kernel_dsl::ir::Reg> {
        let k = match self.expr(index, Some(ScalarType::U32))? {
            Value::IntLit(k) => k,
            Value::Scalar(s) => match s.const_int() {
                Some(k) => k,
                None => {
                    return err(crate::diag::range(&index), "a local array lives in registers, so it is indexed by constants only: use a literal, a const generic, or the variable of a `for` loop with constant bounds")
                }
            },
            other => return err(crate::diag::range(&index), format!("expected an index, found {}", other.describe())),
        };
        if k < 0 || k as usize >= elems.len() {
            return err(
                crate::diag::range(&index),
                format!(
                    "index {k} is out of bounds for an array of {} elements",
                    elems.len()
                ),
            );
        }
        Ok(elems[k as usize])
    }

    fn index_load(&mut self, ix: &syn::ExprIndex) -> DResult<Value> {
        let base = self.expr(&ix.expr, None)?;
        match base {
            Value::Slice(s) => {
                let idx = self.index_scalar(&ix.index)?;
                let addr = self.global_address(&s, &idx)?;
                let d = self.b.reg(s.elem);
                self.span = crate::diag::range(&ix);
                self.inst(
                    Op::Ld {
                        space: StateSpace::Global,
                        ty: memory_type(s.elem),
                        vec: None,
                        nc: !s.mutable,
                        cache: None,
                    },
                    vec![d.into()],
                    vec![addr],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            Value::Shared(a) => {
                let idx = self.index_scalar(&ix.index)?;
                let addr = self.shared_address(&a, &idx, crate::diag::range(&ix.index))?;
                let d = self.b.reg(a.elem);
                self.span = crate::diag::range(&ix);
                self.inst(
                    Op::Ld {
                        space: StateSpace::Shared,
                        ty: memory_type(a.elem),
                        vec: None,
                        nc: false,
                        cache: None,
                    },
                    vec![d.into()],
                    vec![addr],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            Value::Array { elems, .. } => {
                let r = self.array_elem(&elems, &ix.index)?;
                Ok(Value::Scalar(Scalar::reg(r)))
            }
            other => err(
                crate::diag::range(&ix.expr),
                format!("cannot index {}", other.describe()),
            ),
        }
    }

    /// Stores `value` to the place `place` (`x[i]`, `arr[k]` or a mutable variable).
    pub(crate) fn store(
        &mut self,
        place: &Expr,
        value: impl FnOnce(&mut Self, Option<ScalarType>) -> DResult<Scalar>,
    ) -> DResult<()> {
        match place {
            Expr::Paren(p) => self.store(&p.expr, value),
            Expr::Index(ix) => {
                let base = self.expr(&ix.expr, None)?;
                match base {
                    Value::Slice(s) => {
                        if !s.mutable {
                            return err(crate::diag::range(&place), format!(
                                "cannot write through `{}`: it is a `&[{}]`; declare the parameter `&mut [{}]` to write to it",
                                s.name, rust_name(s.elem), rust_name(s.elem)
                            ));
                        }
                        let idx = self.index_scalar(&ix.index)?;
                        let v = value(self, Some(s.elem))?;
                        let v = self.check_type(v, s.elem, crate::diag::range(&place))?;
                        let addr = self.global_address(&s, &idx)?;
                        let r = self.materialize(&v);
                        self.span = crate::diag::range(&place);
                        self.inst(
                            Op::St {
                                space: StateSpace::Global,
                                ty: memory_type(s.elem),
                                vec: None,
                                cache: None,
                            },
                            vec![],
                            vec![addr, r.into()],
                        );
                        Ok(())
                    }
                    Value::Shared(a) => {
                        let idx = self.index_scalar(&ix.index)?;
                        let v = value(self, Some(a.elem))?;
                        let v = self.check_type(v, a.elem, crate::diag::range(&place))?;
                        let addr = self.shared_address(&a, &idx, crate::diag::range(&ix.index))?;
                        let r = self.materialize(&v);
                        self.span = crate::diag::range(&place);
                        self.inst(
                            Op::St {
                                space: StateSpace::Shared,
                                ty: memory_type(a.elem),
                                vec: None,
                                cache: None,
                            },
                            vec![],
                            vec![addr, r.into()],
                        );
                        Ok(())
                    }
                    Value::Array { elems, elem } => {
                        if !self.is_mutable_name(&ix.expr) {
                            return err(crate::diag::range(&ix.expr), "cannot assign to an element of an immutable array: declare it with `let mut`");
                        }
                        let r = self.array_elem(&elems, &ix.index)?;
                        let v = value(self, Some(elem))?;
                        let v = self.check_type(v, elem, crate::diag::range(&place))?;
                        self.mov(r, v);
                        Ok(())
                    }
                    other => err(
                        crate::diag::range(&ix.expr),
                        format!("cannot index {}", other.describe()),
                    ),
                }
            }
            Expr::Path(p) => {
                let Some(ident) = p.path.get_ident() else {
                    return err(
                        crate::diag::range(&place),
                        "only local variables, slice elements and array elements can be assigned",
                    );
                };
                let name = ident.to_string();
                let Some(Binding {
                    value: binding,
                    mutable,
                    flex,
                }) = self.lookup(&name).cloned()
                else {
                    return err(
                        crate::diag::range(&ident),
                        format!("cannot find `{name}` in this kernel"),
                    );
                };
                if !mutable {
                    return err(crate::diag::range(&ident), format!("cannot assign twice to immutable variable `{name}`: declare it with `let mut {name}`"));
                }
                let Value::Scalar(Scalar {
                    op: kernel_dsl::ir::Operand::Reg(r),
                    ty,
                }) = binding
                else {
                    return err(
                        crate::diag::range(&ident),
                        format!("`{name}` cannot be reassigned"),
                    );
                };
                let v = value(self, if flex.is_some() { None } else { Some(ty) })?;
                if v.ty != ty {
                    if let Some(flex) = flex {
                        return Err(self.learn(flex, v.ty));
                    }
                }
                let v = self.check_type(v, ty, crate::diag::range(&place))?;
                self.mov(r, v);
                Ok(())
            }
            _ => err(
                crate::diag::range(&place),
                "only local variables, slice elements and array elements can be assigned",
            ),
        }
    }

    fn is_mutable_name(&self, e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| self.lookup(&i.to_string()))
                .is_some_and(|b| b.mutable),
            _ => false,
        }
    }

    pub(crate) fn check_type(
        &mut self,
        v: Scalar,
        want: ScalarType,
        span: crate::diag::SpanRange,
    ) -> DResult<Scalar> {
        if v.ty == want {
            Ok(v)
        } else {
            err(span, mismatch(want, v.ty))
        }
    }

    // ----- if as a value, blocks ----------------------------------------------------------

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
        let cond = self.materialize(&cond);
        if i.then_branch.stmts.len() == 1
            && is_pure_tail(&i.then_branch)
            && is_pure_else(else_branch)
        {
            // Both arms are side-effect free: compute both and select.
            let a = self.block_value(&i.then_branch, expected)?;
            let b = self.expr(else_branch, expected)?;
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

enum OperandPair {
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

fn max_of(t: ScalarType) -> f64 {
    match t {
        ScalarType::F64 => f64::MAX,
        ScalarType::F16 => 65504.0,
        ScalarType::Bf16 => 3.389_531_389_251_535_5e38,
        _ => f32::MAX as f64,
    }
}

fn op_name(op: BinOp) -> String {
    quote::ToTokens::to_token_stream(&op).to_string()
}

fn fold_int(op: BinOp, a: i64, b: i64, span: crate::diag::SpanRange) -> DResult<Value> {
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

fn fold_float(op: BinOp, a: f64, b: f64, span: crate::diag::SpanRange) -> DResult<Value> {
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

/// Whether evaluating `e` could read memory or have an effect (so `&&`/`||` must not
/// evaluate it eagerly).
pub(crate) fn has_effects(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) | Expr::Path(_) => false,
        Expr::Paren(p) => has_effects(&p.expr),
        Expr::Group(g) => has_effects(&g.expr),
        Expr::Binary(b) => has_effects(&b.left) || has_effects(&b.right),
        Expr::Unary(u) => has_effects(&u.expr),
        Expr::Cast(c) => has_effects(&c.expr),
        Expr::Field(f) => has_effects(&f.base),
        Expr::Call(c) => {
            let pure = matches!(&*c.func, Expr::Path(p) if p.path.get_ident().is_some_and(|i| {
                matches!(i.to_string().as_str(), "thread_idx" | "block_idx" | "block_dim" | "grid_dim" | "lane_id")
            }));
            !pure || c.args.iter().any(has_effects)
        }
        _ => true,
    }
}

fn block_yields(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(syn::Stmt::Expr(e, None)) if !matches!(e, Expr::If(_) | Expr::While(_) | Expr::ForLoop(_) | Expr::Loop(_) | Expr::Assign(_)) || matches!(b.stmts.last(), Some(syn::Stmt::Expr(Expr::If(i), None)) if i.else_branch.is_some()))
}

fn is_pure_tail(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(syn::Stmt::Expr(e, None)) if !has_effects(e))
}

fn is_pure_else(e: &Expr) -> bool {
    match e {
        Expr::Block(b) => b.block.stmts.len() == 1 && is_pure_tail(&b.block),
        _ => false,
    }
}
