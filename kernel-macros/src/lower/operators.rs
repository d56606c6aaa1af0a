//! Unary and binary operators: typing of operands, constant folding, `mad` fusion, comparisons,
//! short-circuit logic and shifts.

use super::expr::*;
use super::value::*;
use super::Lowerer;
use crate::diag::{err, DResult, Diag};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{Imm, Operand};
use kernel_dsl::op::{Cmp, DivMode, MulMode, Op, Rounding};
use kernel_dsl::ScalarType;
use syn::{BinOp, Expr, UnOp};

impl Lowerer<'_> {
    /// Lowers both operands of a binary operator to one common type.
    pub(crate) fn operands(
        &mut self,
        l: &Expr,
        r: &Expr,
        expected: Option<ScalarType>,
    ) -> DResult<OperandPair> {
        let lv = self.expr(l, expected)?;
        self.operands_from(lv, l, r, expected)
    }

    /// [`Self::operands`] with the left operand already lowered.
    pub(crate) fn operands_from(
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

    pub(crate) fn binary(
        &mut self,
        b: &syn::ExprBinary,
        expected: Option<ScalarType>,
    ) -> DResult<Value> {
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
    pub(crate) fn multiply_add(
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
    pub(crate) fn finish_binary(
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
            if let Some(folded) = fold_typed(op, a, c, ty) {
                return Ok(Value::Scalar(folded));
            }
        }
        if is_cmp {
            return self.compare(op, x, y, span);
        }
        if let Some(same) = integer_identity(op, &x, &y) {
            // `c * W` or `cols / W` in the `W = 1` instance of a kernel: a copy (which ptxas
            // removes), never the operand's own register, which a later assignment may change.
            let d = self.b.reg(ty);
            self.mov(d, same);
            return Ok(Value::Scalar(Scalar::reg(d)));
        }
        if let Some((inst, mask)) = unsigned_power_of_two(op, &y) {
            // ptxas divides by an immediate power of two with the full division sequence;
            // for unsigned operands a shift or a mask is exact.
            let a = self.materialize(&x);
            let d = self.b.reg(ty);
            self.span = span;
            let imm = Operand::Imm(Imm::Int(mask));
            self.inst(inst, vec![d.into()], vec![a.into(), imm]);
            return Ok(Value::Scalar(Scalar::reg(d)));
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
    pub(crate) fn logical(&mut self, b: &syn::ExprBinary) -> DResult<Value> {
        let is_and = matches!(b.op, BinOp::And(_));
        let l = self.expr_as(&b.left, ScalarType::Pred)?;
        // A side known at build time decides the result or leaves the other side alone, so
        // `CTA == 1 && t < 32` folds like Rust's const evaluation and prunes what it guards.
        if let Some(k) = l.const_int() {
            return if (k != 0) == is_and {
                Ok(Value::Scalar(self.expr_as(&b.right, ScalarType::Pred)?))
            } else {
                Ok(Value::Scalar(l))
            };
        }
        if self.is_pure(&b.right) {
            let r = self.expr_as(&b.right, ScalarType::Pred)?;
            if let Some(k) = r.const_int() {
                return Ok(Value::Scalar(if (k != 0) == is_and { l } else { r }));
            }
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

    pub(crate) fn shift(
        &mut self,
        b: &syn::ExprBinary,
        expected: Option<ScalarType>,
    ) -> DResult<Value> {
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
        if let (Some(v), Some(by)) = (x.const_int(), y.const_int()) {
            // `32u32 >> F` in an instance: a constant, usable as an array length, a loop
            // bound or a register-array index.
            if let Some(folded) = fold_shift(b.op, v, by, x.ty) {
                return Ok(Value::Scalar(folded));
            }
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

    pub(crate) fn unary(
        &mut self,
        u: &syn::ExprUnary,
        expected: Option<ScalarType>,
    ) -> DResult<Value> {
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
                if let Some(k) = s.const_int() {
                    let v = if s.ty == ScalarType::Pred {
                        (k == 0) as i64
                    } else {
                        wrap_int(!k, s.ty)
                    };
                    return Ok(Value::Scalar(Scalar {
                        op: Operand::Imm(Imm::Int(v)),
                        ty: s.ty,
                    }));
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
}

/// Folds `a op c` for two typed integer or `bool` constants, with the type's own semantics
/// (unsigned order and division for `u32`/`u64`, wrapping arithmetic); `None` where the
/// operator does not fold (division by zero is left to the instruction).
pub(crate) fn fold_typed(op: BinOp, a: i64, c: i64, ty: ScalarType) -> Option<Scalar> {
    use BinOp::*;
    let unsigned = is_int(ty) && !is_signed(ty);
    let scalar = |v: i64, ty: ScalarType| Scalar {
        op: Operand::Imm(Imm::Int(v)),
        ty,
    };
    let boolean = |v: bool| Some(scalar(v as i64, ScalarType::Pred));
    if ty == ScalarType::Pred {
        let (p, q) = (a != 0, c != 0);
        return match op {
            Eq(_) => boolean(p == q),
            Ne(_) => boolean(p != q),
            BitAnd(_) => boolean(p & q),
            BitOr(_) => boolean(p | q),
            BitXor(_) => boolean(p ^ q),
            _ => None,
        };
    }
    if !is_int(ty) {
        return None;
    }
    let order = if unsigned {
        (a as u64).cmp(&(c as u64))
    } else {
        a.cmp(&c)
    };
    use std::cmp::Ordering::*;
    match op {
        Eq(_) => return boolean(order == Equal),
        Ne(_) => return boolean(order != Equal),
        Lt(_) => return boolean(order == Less),
        Le(_) => return boolean(order != Greater),
        Gt(_) => return boolean(order == Greater),
        Ge(_) => return boolean(order != Less),
        _ => {}
    }
    let v = match op {
        Add(_) => a.wrapping_add(c),
        Sub(_) => a.wrapping_sub(c),
        Mul(_) => a.wrapping_mul(c),
        Div(_) | Rem(_) if c == 0 => return None,
        Div(_) if unsigned => ((a as u64) / (c as u64)) as i64,
        Rem(_) if unsigned => ((a as u64) % (c as u64)) as i64,
        Div(_) => a.wrapping_div(c),
        Rem(_) => a.wrapping_rem(c),
        BitAnd(_) => a & c,
        BitOr(_) => a | c,
        BitXor(_) => a ^ c,
        _ => return None,
    };
    Some(scalar(wrap_int(v, ty), ty))
}

/// `a << c` or `a >> c` of type `ty` where the amount is below the type's width (past it, PTX
/// clamps, and the instruction is left to say so).
fn fold_shift(op: BinOp, a: i64, c: i64, ty: ScalarType) -> Option<Scalar> {
    let width = match ty {
        ScalarType::U32 | ScalarType::S32 => 32,
        ScalarType::U64 | ScalarType::S64 => 64,
        _ => return None,
    };
    if !(0..width).contains(&c) {
        return None;
    }
    let v = match op {
        BinOp::Shl(_) => a.wrapping_shl(c as u32),
        BinOp::Shr(_) if is_signed(ty) => a >> c,
        BinOp::Shr(_) => ((a as u64) >> c) as i64,
        _ => return None,
    };
    Some(Scalar {
        op: Operand::Imm(Imm::Int(wrap_int(v, ty))),
        ty,
    })
}

/// For `x / 2^k` and `x % 2^k` on an unsigned `x` (k ≥ 1): the shift or mask that computes it
/// exactly, with its immediate (`k`, or `2^k − 1`).
fn unsigned_power_of_two(op: BinOp, y: &Scalar) -> Option<(Op, i64)> {
    use BinOp::*;
    let ty = y.ty;
    if !is_int(ty) || is_signed(ty) {
        return None;
    }
    let c = y.const_int()?;
    if c < 2 || c & (c - 1) != 0 {
        return None;
    }
    match op {
        Div(_) | DivAssign(_) => Some((Op::Shr { ty }, i64::from(c.trailing_zeros()))),
        Rem(_) | RemAssign(_) => Some((Op::And { ty: bits_of(ty) }, c - 1)),
        _ => None,
    }
}

/// `x` where an integer operation by a constant leaves it unchanged (`x + 0`, `0 + x`,
/// `x − 0`, `x · 1`, `1 · x`, `x / 1`), so that the instances of a const generic that take the
/// neutral value cost nothing.
fn integer_identity(op: BinOp, x: &Scalar, y: &Scalar) -> Option<Scalar> {
    use BinOp::*;
    if !is_int(x.ty) {
        return None;
    }
    match (op, x.const_int(), y.const_int()) {
        (Add(_) | AddAssign(_) | Sub(_) | SubAssign(_), _, Some(0)) => Some(x.clone()),
        (Mul(_) | MulAssign(_) | Div(_) | DivAssign(_), _, Some(1)) => Some(x.clone()),
        (Add(_) | AddAssign(_), Some(0), _) => Some(y.clone()),
        (Mul(_) | MulAssign(_), Some(1), _) => Some(y.clone()),
        _ => None,
    }
}
