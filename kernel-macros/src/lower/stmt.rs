//! Statements and control flow: `let`, assignment, `if`, `while`, `loop`, `for` over ranges,
//! `break`, `continue`, `return`.

use super::expr::{bits_of, is_int};
use super::value::{Binding, Scalar, Value};
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::{rust_name, scalar_of};
use kernel_dsl::ir::{Imm, Operand, Stmt};
use kernel_dsl::op::{Cmp, Op};
use kernel_dsl::ScalarType;
use syn::{BinOp, Expr};

/// Largest trip count a constant-bound loop over a local array is unrolled to.
const MAX_UNROLL: i64 = 256;

impl Lowerer<'_> {
    pub(crate) fn block_stmts(&mut self, stmts: &[syn::Stmt]) -> DResult<()> {
        self.push_scope();
        let out = stmts.iter().try_for_each(|s| self.stmt(s));
        self.pop_scope();
        out
    }

    pub(crate) fn stmt(&mut self, s: &syn::Stmt) -> DResult<()> {
        match s {
            syn::Stmt::Local(l) => self.local(l),
            syn::Stmt::Expr(e, _) => self.stmt_expr(e),
            // A `const` of a kernel type is an immutable binding whose value is known here.
            syn::Stmt::Item(syn::Item::Const(c)) if c.generics.params.is_empty() => {
                let (name, ty, value) = (&c.ident, &c.ty, &c.expr);
                let binding: syn::Stmt =
                    syn::parse_quote_spanned!(name.span()=> let #name: #ty = #value;);
                self.stmt(&binding)
            }
            syn::Stmt::Item(i) => err(crate::diag::range(&i), "items (fn, struct, use...) cannot be declared inside a kernel: declare helper functions outside it, marked `#[device]`; constants are `const` items inside the kernel or const generic parameters"),
            syn::Stmt::Macro(m) => err(crate::diag::range(&m), format!(
                "macros such as `{}!` are not available in kernels",
                m.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
            )),
        }
    }

    fn local(&mut self, l: &syn::Local) -> DResult<()> {
        let saved = self.span;
        self.span = crate::diag::range(&l);
        let out = self.local_inner(l);
        self.span = saved;
        out
    }

    fn local_inner(&mut self, l: &syn::Local) -> DResult<()> {
        let (pat, annotated) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            other => (other, None),
        };
        let tuple_typed = matches!(annotated, Some(syn::Type::Tuple(_)));
        if matches!(
            pat,
            syn::Pat::Tuple(_) | syn::Pat::Slice(_) | syn::Pat::Wild(_)
        ) || tuple_typed
        {
            return self.local_pattern(l);
        }
        let syn::Pat::Ident(pi) = pat else {
            return err(
                crate::diag::range(&pat),
                "kernels bind names, `_`, and tuples and arrays of them: `let x = …`, `let (a, [b, c]) = …`",
            );
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            return err(
                crate::diag::range(&pat),
                "kernels bind plain names only: `let x = ...` or `let mut x = ...`",
            );
        }
        let Some(init) = &l.init else {
            return err(
                crate::diag::range(&l),
                "a `let` in a kernel needs an initial value",
            );
        };
        if let Some((_, d)) = &init.diverge {
            return err(
                crate::diag::range(&d),
                "`let ... else` is not supported in kernels",
            );
        }
        let name = pi.ident.to_string();
        let mutable = pi.mutability.is_some();
        let (let_id, hint) = self.next_let();
        let want = match annotated {
            Some(syn::Type::Array(a)) => {
                let elem = scalar_of(&a.elem, &self.spec.types)?;
                let value = self.expr(&init.expr, Some(elem))?;
                let Value::Array { elem: got, .. } = &value else {
                    return err(
                        crate::diag::range(&init.expr),
                        format!("expected an array, found {}", value.describe()),
                    );
                };
                if *got != elem {
                    return err(
                        crate::diag::range(&init.expr),
                        super::expr::mismatch(elem, *got),
                    );
                }
                self.bind(
                    &name,
                    Binding {
                        value,
                        mutable,
                        flex: None,
                    },
                );
                return Ok(());
            }
            Some(t) => Some(scalar_of(t, &self.spec.types)?),
            None => hint,
        };
        self.let_name = Some(name.clone());
        let value = self.expr(&init.expr, want);
        self.let_name = None;
        let value = value?;
        let flex = match (&value, annotated) {
            (Value::IntLit(_) | Value::FloatLit(_), None) => Some(let_id),
            _ => None,
        };
        let value =
            match value {
                Value::IntLit(_) | Value::FloatLit(_) | Value::Scalar(_) => {
                    let s = self.as_scalar(value, want, crate::diag::range(&init.expr))?;
                    if let Some(w) = want {
                        if s.ty != w {
                            if let Some(f) = self.flex_of(&init.expr) {
                                return Err(self.learn(f, w));
                            }
                            return err(
                                crate::diag::range(&init.expr),
                                super::expr::mismatch(w, s.ty),
                            );
                        }
                    }
                    let aliases_a_mutable_place =
                        matches!(s.op, Operand::Reg(r) if self.is_mutable_place(r));
                    if mutable || aliases_a_mutable_place || !matches!(s.op, Operand::Reg(_)) {
                        // A binding that would share the register of a mutable variable or array
                        // element gets its own copy: `let x = v[k]; v[k] = 0.0;` leaves `x` alone.
                        // A mutable binding owns its register; an immediate gets one so that
                        // later uses read a value, not a literal of a fixed width.
                        if !mutable && matches!(s.op, Operand::Imm(_)) && s.ty != ScalarType::Pred {
                            Value::Scalar(s)
                        } else {
                            let r = self.b.reg(s.ty);
                            self.mov(r, s);
                            Value::Scalar(Scalar::reg(r))
                        }
                    } else {
                        Value::Scalar(s)
                    }
                }
                // A copy, so that writes through the new name do not alias the old one, nor
                // writes through a mutable old one (`let held = next; next = …;`) the new one.
                Value::Array { elems, elem }
                    if mutable || elems.iter().any(|&r| self.is_mutable_place(r)) =>
                {
                    self.copied_array(&elems, elem)
                }
                Value::Tuple(_) if mutable => return err(
                    crate::diag::range(&pat),
                    "a tuple cannot be changed in place: destructure it, `let (mut a, mut b) = …`",
                ),
                Value::Unit => {
                    return err(
                        crate::diag::range(&init.expr),
                        "this expression has no value to bind",
                    )
                }
                other => other,
            };
        self.bind(
            &name,
            Binding {
                value,
                mutable,
                flex,
            },
        );
        Ok(())
    }

    /// `let (a, mut b) = …`, `let _ = …` or `let t: (f32, u32) = …`.
    fn local_pattern(&mut self, l: &syn::Local) -> DResult<()> {
        let Some(init) = &l.init else {
            return err(
                crate::diag::range(&l),
                "a `let` in a kernel needs an initial value",
            );
        };
        if let Some((_, d)) = &init.diverge {
            return err(
                crate::diag::range(&d),
                "`let ... else` is not supported in kernels",
            );
        }
        let value = self.expr(&init.expr, None)?;
        self.bind_pattern(&l.pat, value)
    }

    /// An expression in statement position.
    pub(crate) fn stmt_expr(&mut self, e: &Expr) -> DResult<()> {
        let saved = self.span;
        self.span = crate::diag::range(&e);
        let out = self.stmt_expr_inner(e);
        self.span = saved;
        out
    }

    fn stmt_expr_inner(&mut self, e: &Expr) -> DResult<()> {
        match e {
            Expr::Assign(a) if self.array_variable(&a.left).is_some() => {
                self.assign_array(&a.left, &a.right)
            }
            Expr::Assign(a) => self.store(&a.left, |l, want| match want {
                Some(t) => l.expr_as(&a.right, t),
                None => l.expr_scalar(&a.right, None),
            }),
            Expr::Binary(b) if is_compound(b.op) => {
                let op = b.op;
                let right = &b.right;
                let left = &b.left;
                self.store(&b.left, |l, want| {
                    let cur = l.expr(left, want)?;
                    let cur = l.as_scalar(cur, want, crate::diag::range(&left))?;
                    let flex = l.flex_of(left);
                    l.compound(op, cur, right, flex)
                })
            }
            Expr::If(i) => {
                self.if_stmt(i)?;
                Ok(())
            }
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(lp) => {
                if let Some(l) = &lp.label {
                    return err(
                        crate::diag::range(&l),
                        "loop labels are not supported in kernels",
                    );
                }
                self.b.open_loop();
                let out = self.block_stmts(&lp.body.stmts);
                self.b.close();
                out
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return err(
                        crate::diag::range(&b),
                        "`break` in a kernel takes no label and no value",
                    );
                }
                self.b.push(Stmt::Break);
                Ok(())
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    return err(
                        crate::diag::range(&c),
                        "`continue` in a kernel takes no label",
                    );
                }
                self.b.push(Stmt::Continue);
                Ok(())
            }
            Expr::Return(r) => self.return_stmt(r),
            Expr::Block(b) if b.label.is_none() && b.block.stmts.iter().all(|_| true) => {
                let v = self.block_value(&b.block, None)?;
                let _ = v;
                Ok(())
            }
            other => {
                let v = self.expr(other, None)?;
                let _ = v;
                Ok(())
            }
        }
    }

    /// `cur op= right`: the new value.
    fn compound(
        &mut self,
        op: BinOp,
        cur: Scalar,
        right: &Expr,
        flex: Option<usize>,
    ) -> DResult<Scalar> {
        let ty = cur.ty;
        match op {
            BinOp::ShlAssign(_) | BinOp::ShrAssign(_) => {
                if !is_int(ty) {
                    return err(
                        self.span,
                        format!(
                            "shifts are defined on integers only, not `{}`",
                            rust_name(ty)
                        ),
                    );
                }
                let amount = self.expr_scalar(right, Some(ScalarType::U32))?;
                let amount = if amount.ty == ScalarType::U32 || matches!(amount.op, Operand::Imm(_))
                {
                    amount
                } else {
                    self.convert(amount, ScalarType::U32)?
                };
                let a = self.materialize(&cur);
                let d = self.b.reg(ty);
                let op = if matches!(op, BinOp::ShlAssign(_)) {
                    Op::Shl { ty: bits_of(ty) }
                } else {
                    Op::Shr { ty }
                };
                self.inst(op, vec![d.into()], vec![a.into(), amount.op]);
                Ok(Scalar::reg(d))
            }
            _ => {
                let r = match flex {
                    Some(f) => {
                        let r = self.expr_scalar(right, Some(ty))?;
                        if r.ty != ty {
                            return Err(self.learn(f, r.ty));
                        }
                        r
                    }
                    None => self.expr_as(right, ty)?,
                };
                let inst = self
                    .arith_op(op, ty, crate::diag::range(&right))
                    .map_err(|m| {
                        crate::diag::Diag::new(
                            self.span,
                            m.unwrap_or_else(|| {
                                format!(
                                    "this compound assignment is not defined for `{}`",
                                    rust_name(ty)
                                )
                            }),
                        )
                    })?;
                let a = self.materialize(&cur);
                let b = self.src(&r);
                let d = self.b.reg(ty);
                self.inst(inst, vec![d.into()], vec![a.into(), b]);
                Ok(Scalar::reg(d))
            }
        }
    }

    pub(crate) fn if_stmt(&mut self, i: &syn::ExprIf) -> DResult<()> {
        let cond = self.expr_as(&i.cond, ScalarType::Pred)?;
        if let Some(k) = cond.const_int() {
            // A condition known at build time (a const generic test) keeps one branch only.
            if k != 0 {
                return self.block_stmts(&i.then_branch.stmts);
            }
            if let Some((_, e)) = &i.else_branch {
                return self.stmt_expr(e);
            }
            return Ok(());
        }
        let cond = self.materialize(&cond);
        self.b.open_if(cond);
        self.block_stmts(&i.then_branch.stmts)?;
        if let Some((_, e)) = &i.else_branch {
            self.b.open_else();
            match &**e {
                Expr::Block(b) => self.block_stmts(&b.block.stmts)?,
                other => self.stmt_expr(other)?,
            }
        }
        self.b.close();
        Ok(())
    }

    fn while_loop(&mut self, w: &syn::ExprWhile) -> DResult<()> {
        if let Some(l) = &w.label {
            return err(
                crate::diag::range(&l),
                "loop labels are not supported in kernels",
            );
        }
        self.b.open_loop();
        let cond = self.expr_as(&w.cond, ScalarType::Pred)?;
        let cond = self.materialize(&cond);
        let stop = self.b.reg(ScalarType::Pred);
        self.inst(
            Op::Not {
                ty: ScalarType::Pred,
            },
            vec![stop.into()],
            vec![cond.into()],
        );
        self.b.open_if(stop);
        self.b.push(Stmt::Break);
        self.b.close();
        let out = self.block_stmts(&w.body.stmts);
        self.b.close();
        out
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> DResult<()> {
        if let Some(l) = &f.label {
            return err(
                crate::diag::range(&l),
                "loop labels are not supported in kernels",
            );
        }
        let syn::Pat::Ident(pi) = &*f.pat else {
            return err(
                crate::diag::range(&f.pat),
                "a `for` loop in a kernel binds one name: `for i in a..b`",
            );
        };
        let name = pi.ident.to_string();
        if let Expr::Array(list) = &*f.expr {
            return self.for_each_constant(&name, list, &f.body);
        }
        let (range, step) = split_step_by(&f.expr)?;
        let Expr::Range(r) = range else {
            return err(
                crate::diag::range(&f.expr),
                "kernels loop over ranges (`for i in a..b`, `for i in (a..b).step_by(k)`) or lists of constants (`for d in [16, 8, 4, 2, 1]`)",
            );
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return err(
                crate::diag::range(&r),
                "a kernel's `for` range needs both ends: `a..b`",
            );
        };
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let sv = self.expr(start, None)?;
        let ev = self.expr(end, None)?;
        let ty = match (&sv, &ev) {
            (Value::Scalar(s), _) => s.ty,
            (_, Value::Scalar(e)) => e.ty,
            _ => ScalarType::U32,
        };
        let s = self.as_scalar(sv, Some(ty), crate::diag::range(&start))?;
        let e = self.as_scalar(ev, Some(ty), crate::diag::range(&end))?;
        if !is_int(s.ty) || s.ty != e.ty {
            return err(
                crate::diag::range(&r),
                format!(
                    "a `for` range needs two integers of one type, found `{}` and `{}`",
                    rust_name(s.ty),
                    rust_name(e.ty)
                ),
            );
        }
        let step = match step {
            Some(k) => {
                let k = self.expr_as(k, ty)?;
                if k.const_int() == Some(0) {
                    return err(crate::diag::range(&f.expr), "`step_by(0)` never advances");
                }
                k
            }
            None => Scalar {
                op: Operand::Imm(Imm::Int(1)),
                ty,
            },
        };
        // Constant bounds and a body that indexes a local array (or hands one over as
        // `&mut`): unroll, so the indices are constants and the array stays in registers.
        if let (Some(a), Some(b), Some(k)) = (s.const_int(), e.const_int(), step.const_int()) {
            let last = if inclusive { b + 1 } else { b };
            let trips = if last > a { (last - a + k - 1) / k } else { 0 };
            if k > 0
                && trips <= MAX_UNROLL
                && self.indexes_local_array(&f.body)
                && !has_loop_exit(&f.body.stmts)
            {
                let mut i = a;
                while i < last {
                    self.push_scope();
                    self.bind(
                        &name,
                        Binding {
                            value: Value::Scalar(Scalar {
                                op: Operand::Imm(Imm::Int(i)),
                                ty,
                            }),
                            mutable: false,
                            flex: None,
                        },
                    );
                    let out = self.block_stmts(&f.body.stmts);
                    self.pop_scope();
                    out?;
                    i += k;
                }
                return Ok(());
            }
        }
        let end_reg = match e.op {
            Operand::Imm(_) => e.clone(),
            _ => {
                // The end is evaluated once, before the loop, as Rust does.
                let r = self.b.reg(ty);
                self.mov(r, e.clone());
                Scalar::reg(r)
            }
        };
        let i = self.b.reg(ty);
        self.mov(i, s);
        self.b.open_loop();
        let done = self.b.reg(ScalarType::Pred);
        let cmp = if inclusive { Cmp::Gt } else { Cmp::Ge };
        self.inst(
            Op::Setp {
                cmp,
                ty,
                ftz: false,
            },
            vec![done.into()],
            vec![i.into(), end_reg.op.clone()],
        );
        self.b.open_if(done);
        self.b.push(Stmt::Break);
        self.b.close();
        self.push_scope();
        self.bind(
            &name,
            Binding {
                value: Value::Scalar(Scalar::reg(i)),
                mutable: false,
                flex: None,
            },
        );
        let out = self.block_stmts(&f.body.stmts);
        self.pop_scope();
        out?;
        self.b.open_latch();
        let next = self.b.reg(ty);
        let step_op = self.src(&step);
        self.inst(
            Op::Add {
                ty,
                rnd: None,
                ftz: false,
                sat: false,
            },
            vec![next.into()],
            vec![i.into(), step_op],
        );
        self.mov(i, Scalar::reg(next));
        self.b.close();
        Ok(())
    }

    fn return_stmt(&mut self, r: &syn::ExprReturn) -> DResult<()> {
        match self.returns.last().copied() {
            None => {
                if let Some(e) = &r.expr {
                    return err(crate::diag::range(&e), "a kernel returns nothing: write results through a `&mut [T]` parameter");
                }
                self.b.push(Stmt::Return);
                Ok(())
            }
            Some(_) => err(crate::diag::range(&r), "`return` inside a `#[device]` function is not supported: make the result the function's last expression"),
        }
    }

    /// Whether a block indexes a local array bound in scope.
    fn indexes_local_array(&self, block: &syn::Block) -> bool {
        struct Finder<'l, 'a> {
            l: &'l Lowerer<'a>,
            found: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Finder<'_, '_> {
            fn visit_expr_index(&mut self, i: &'ast syn::ExprIndex) {
                if let Expr::Path(p) = &*i.expr {
                    if let Some(id) = p.path.get_ident() {
                        if matches!(
                            self.l.lookup(&id.to_string()),
                            Some(Binding {
                                value: Value::Array { .. },
                                ..
                            })
                        ) {
                            self.found = true;
                        }
                    }
                }
                syn::visit::visit_expr_index(self, i);
            }
            // `&mut acc` hands a whole array to an intrinsic that writes it in place (a
            // `wgmma` accumulator): unrolled, its operands' offsets become constants.
            fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
                if let Expr::Path(p) = &*r.expr {
                    if let Some(id) = p.path.get_ident() {
                        if r.mutability.is_some()
                            && matches!(
                                self.l.lookup(&id.to_string()),
                                Some(Binding {
                                    value: Value::Array { .. },
                                    ..
                                })
                            )
                        {
                            self.found = true;
                        }
                    }
                }
                syn::visit::visit_expr_reference(self, r);
            }
        }
        let mut f = Finder {
            l: self,
            found: false,
        };
        syn::visit::Visit::visit_block(&mut f, block);
        f.found || block_declares_array(block)
    }

    /// `for d in [16, 8, 4, 2, 1] { … }`: the body once per constant, in order, with `d` bound
    /// to it (a butterfly's offsets, a list of widths). The constants take the type the body
    /// gives them, `u32` unless a suffix says otherwise.
    fn for_each_constant(
        &mut self,
        name: &str,
        list: &syn::ExprArray,
        body: &syn::Block,
    ) -> DResult<()> {
        if has_loop_exit(&body.stmts) {
            return err(
                crate::diag::range(&list),
                "a loop over a list of constants is unrolled, so its body cannot `break` or `continue`",
            );
        }
        for e in &list.elems {
            let value = match self.expr(e, None)? {
                Value::IntLit(v) => Value::Scalar(Scalar {
                    op: Operand::Imm(Imm::Int(v)),
                    ty: ScalarType::U32,
                }),
                Value::Scalar(s) if s.const_int().is_some() => Value::Scalar(s),
                other => {
                    return err(
                        crate::diag::range(&e),
                        format!(
                            "a `for` list holds integer constants, found {}",
                            other.describe()
                        ),
                    )
                }
            };
            self.push_scope();
            self.bind(
                name,
                Binding {
                    value,
                    mutable: false,
                    flex: None,
                },
            );
            let out = self.block_stmts(&body.stmts);
            self.pop_scope();
            out?;
        }
        Ok(())
    }

    /// Evaluates a constant generic argument: `4`, `{ BLOCK / 32 }`, `N` or `T::VEC` (the last
    /// two parse as types).
    pub(crate) fn const_generic_arg(&mut self, a: &syn::GenericArgument) -> DResult<i64> {
        match a {
            syn::GenericArgument::Const(e) => self.const_eval(e),
            syn::GenericArgument::Type(syn::Type::Path(p)) => {
                let e: Expr = syn::parse_quote!(#p);
                self.const_eval(&e)
            }
            other => err(
                crate::diag::range(&other),
                "expected a constant: a literal, a const generic parameter, `T::VEC`, or `{ … }` arithmetic on them",
            ),
        }
    }

    /// Evaluates a constant expression (literals, const generics, arithmetic).
    pub(crate) fn const_eval(&mut self, e: &Expr) -> DResult<i64> {
        match self.expr(e, None)? {
            Value::IntLit(v) => Ok(v),
            Value::Scalar(s) => s.const_int().ok_or_else(|| crate::diag::Diag::new(crate::diag::range(&e), "expected a constant: a literal, a const generic parameter, or arithmetic on them")),
            other => err(crate::diag::range(&e), format!("expected a constant, found {}", other.describe())),
        }
    }
}

fn block_declares_array(block: &syn::Block) -> bool {
    block.stmts.iter().any(|s| matches!(s, syn::Stmt::Local(l) if matches!(l.init.as_ref().map(|i| &*i.expr), Some(Expr::Repeat(_) | Expr::Array(_)))))
}

fn is_compound(op: BinOp) -> bool {
    use BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | BitXorAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// `(a..b).step_by(k)` → (`a..b`, `k`).
fn split_step_by(e: &Expr) -> DResult<(&Expr, Option<&Expr>)> {
    match e {
        Expr::MethodCall(m) if m.method == "step_by" => {
            if m.args.len() != 1 {
                return err(crate::diag::range(&m), "`step_by` takes one argument");
            }
            let mut inner = &*m.receiver;
            while let Expr::Paren(p) = inner {
                inner = &p.expr;
            }
            Ok((inner, m.args.first()))
        }
        Expr::Paren(p) => split_step_by(&p.expr),
        other => Ok((other, None)),
    }
}

/// Whether statements hold a `break` or `continue` of this loop (not of a nested one).
fn has_loop_exit(stmts: &[syn::Stmt]) -> bool {
    struct Finder {
        depth: u32,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_expr_break(&mut self, _: &'ast syn::ExprBreak) {
            if self.depth == 0 {
                self.found = true;
            }
        }
        fn visit_expr_continue(&mut self, _: &'ast syn::ExprContinue) {
            if self.depth == 0 {
                self.found = true;
            }
        }
        fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
            self.depth += 1;
            syn::visit::visit_expr_while(self, w);
            self.depth -= 1;
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            self.depth += 1;
            syn::visit::visit_expr_for_loop(self, f);
            self.depth -= 1;
        }
        fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
            self.depth += 1;
            syn::visit::visit_expr_loop(self, l);
            self.depth -= 1;
        }
    }
    let mut f = Finder {
        depth: 0,
        found: false,
    };
    for s in stmts {
        syn::visit::Visit::visit_stmt(&mut f, s);
    }
    f.found
}
