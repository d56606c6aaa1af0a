//! Method-call syntax: float math (`x.exp()`, `a.max(b)`, `x.mul_add(a, b)`), and buffer
//! operations (`x.load4(i)`, `y.store4(i, v)`, `x.load_cg(i)`, `y.atomic_add(i, v)`). Math
//! methods that are rows of `kernel_dsl::intrinsics` lower through `chain.rs`.

use super::expr::{is_float, is_int, memory_type};
use super::value::{Scalar, Value};
use super::vector::VecPlace;
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::rust_name;
use kernel_dsl::intrinsics::{self, Lowering};
use kernel_dsl::ir::{Imm, Operand, Reg};
use kernel_dsl::op::{ApproxFn, AtomOp, CacheOp, Op, Rounding};
use kernel_dsl::{ScalarType, StateSpace};
use syn::{Expr, ExprMethodCall};

const LOG2_E: f32 = std::f32::consts::LOG2_E;
const LN_2: f32 = std::f32::consts::LN_2;

impl Lowerer<'_> {
    pub(crate) fn method_call(
        &mut self,
        m: &ExprMethodCall,
        expected: Option<ScalarType>,
    ) -> DResult<Value> {
        let name = m.method.to_string();
        let recv = self.expr(&m.receiver, expected)?;
        let args: Vec<&Expr> = m.args.iter().collect();
        let arity = |n: usize| -> DResult<()> {
            if args.len() != n {
                return err(
                    crate::diag::range(&m),
                    format!(
                        "`{name}` takes {n} argument{}, but {} {} supplied",
                        if n == 1 { "" } else { "s" },
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                );
            }
            Ok(())
        };
        match recv {
            Value::Slice(s) => {
                self.span = crate::diag::range(&m);
                match name.as_str() {
                    "load4" | "load8" | "load_vec" | "load_vec_or" | "load_vec_streaming" => {
                        let guarded = name == "load_vec_or";
                        arity(if guarded { 3 } else { 1 })?;
                        let span = crate::diag::range(&m);
                        let lanes = match name.as_str() {
                            "load4" => self.fixed_lanes(&s, 4, 32, &name, span)?,
                            "load8" => self.fixed_lanes(&s, 8, 16, &name, span)?,
                            _ => self.vector_lanes(m.turbofish.as_ref(), span)?,
                        };
                        let guard = guarded.then(|| (args[1], args[2]));
                        // Read once: not kept in L1, where it would evict what is read again.
                        let cache = (name == "load_vec_streaming").then_some(CacheOp::NoL1);
                        self.vector_load(VecPlace::Global(&s), lanes, args[0], guard, cache, span)
                    }
                    "store4" | "store8" | "store_vec" | "store_words" => {
                        arity(2)?;
                        if !s.mutable {
                            return err(crate::diag::range(&m.receiver), format!("cannot write through `{}`: it is a `&[{}]`; declare the parameter `&mut [{}]` to write to it", s.name, rust_name(s.elem), rust_name(s.elem)));
                        }
                        let span = crate::diag::range(&m);
                        if name == "store_words" {
                            let a = self.word_count(&name, m.turbofish.as_ref(), span)?;
                            return self.words_store(&s, a, args[0], args[1], span);
                        }
                        let lanes = match name.as_str() {
                            "store4" => self.fixed_lanes(&s, 4, 32, &name, span)?,
                            "store8" => self.fixed_lanes(&s, 8, 16, &name, span)?,
                            _ => self.vector_lanes(m.turbofish.as_ref(), span)?,
                        };
                        self.vector_store(VecPlace::Global(&s), lanes, args[0], args[1], span)
                    }
                    "load_words" | "load_words_or" => {
                        let guarded = name == "load_words_or";
                        arity(if guarded { 2 } else { 1 })?;
                        let span = crate::diag::range(&m);
                        let a = self.word_count(&name, m.turbofish.as_ref(), span)?;
                        let ok = guarded.then(|| args[1]);
                        self.words_load(&s, a, args[0], ok, span)
                    }
                    "load_cg" => {
                        arity(1)?;
                        self.load_cg(&s, args[0], crate::diag::range(&m))
                    }
                    n if n.starts_with("atomic_") => {
                        if !s.mutable {
                            return err(crate::diag::range(&m.receiver), format!("cannot update `{}` atomically: it is a `&[{}]`; declare the parameter `&mut [{}]`", s.name, rust_name(s.elem), rust_name(s.elem)));
                        }
                        let idx = self.index_scalar(args.first().copied().ok_or_else(|| crate::diag::Diag::new(crate::diag::range(&m), format!("`{n}` takes an index and a value")))?)?;
                        let addr = self.global_address(&s, &idx)?;
                        self.atomic(n, StateSpace::Global, s.elem, addr, &args, crate::diag::range(&m))
                    }
                    "len" => err(crate::diag::range(&m), "a kernel's slices carry no length: pass the length as a `u32` parameter"),
                    other => err(crate::diag::range(&m.method), format!("slices in kernels have no method `{other}`: index them, or use load_vec/load_vec_or/load_vec_streaming/store_vec (load4/store4, load8/store8), load_words/load_words_or/store_words, load_cg, atomic_*")),
                }
            }
            Value::Shared(a) => {
                if let Some(n) = name.strip_prefix("atomic_") {
                    let idx = self.index_scalar(args.first().copied().ok_or_else(|| {
                        crate::diag::Diag::new(
                            crate::diag::range(&m),
                            format!("`atomic_{n}` takes an index and a value"),
                        )
                    })?)?;
                    let addr = self.shared_address(&a, &idx, crate::diag::range(&m))?;
                    self.span = crate::diag::range(&m);
                    return self.atomic(
                        &name,
                        StateSpace::Shared,
                        a.elem,
                        addr,
                        &args,
                        crate::diag::range(&m),
                    );
                }
                let span = crate::diag::range(&m);
                match name.as_str() {
                    "load_vec" | "load_vec_or" => {
                        let guarded = name == "load_vec_or";
                        arity(if guarded { 3 } else { 1 })?;
                        let lanes = self.vector_lanes(m.turbofish.as_ref(), span)?;
                        let guard = guarded.then(|| (args[1], args[2]));
                        self.vector_load(VecPlace::Shared(&a), lanes, args[0], guard, None, span)
                    }
                    "store_vec" => {
                        arity(2)?;
                        let lanes = self.vector_lanes(m.turbofish.as_ref(), span)?;
                        self.vector_store(VecPlace::Shared(&a), lanes, args[0], args[1], span)
                    }
                    _ => err(
                        crate::diag::range(&m.method),
                        format!("shared arrays have no method `{name}`: index them, or use load_vec/load_vec_or/store_vec, atomic_*"),
                    ),
                }
            }
            Value::Array { elems, elem } => match name.as_str() {
                "len" => Ok(Value::Scalar(Scalar {
                    op: Operand::Imm(Imm::Int(elems.len() as i64)),
                    ty: ScalarType::U32,
                })),
                _ => err(
                    crate::diag::range(&m.method),
                    format!(
                        "arrays of `{}` have no method `{name}` in kernels",
                        rust_name(elem)
                    ),
                ),
            },
            v @ (Value::Scalar(_) | Value::IntLit(_) | Value::FloatLit(_)) => {
                let default = match v {
                    Value::FloatLit(_) => Some(ScalarType::F32),
                    _ => expected,
                };
                let a = self.as_scalar(v, default, crate::diag::range(&m.receiver))?;
                self.span = crate::diag::range(&m);
                match name.as_str() {
                    "mul_add" => {
                        arity(2)?;
                        self.fma(a, args[0], args[1])
                    }
                    "min" | "max" => {
                        arity(1)?;
                        self.min_max(name == "min", a, args[0])
                    }
                    n if super::calls::MATH_UNARY.contains(&n) => {
                        arity(0)?;
                        self.math_unary(n, a, crate::diag::range(&m))
                    }
                    n if intrinsics::find_for(n, a.ty).is_some_and(|i| i.method) => {
                        let intr = intrinsics::find_for(n, a.ty).expect("found above");
                        let Lowering::Chain(ops) = intr.lowering else {
                            unreachable!("method rows are chains (a kernel-dsl test checks)")
                        };
                        arity(intr.params.len() - 1)?;
                        self.chain_method(intr, ops, a, &args, crate::diag::range(&m))
                    }
                    "to_f32" => {
                        arity(0)?;
                        Ok(Value::Scalar(self.convert(a, ScalarType::F32)?))
                    }
                    other => err(
                        crate::diag::range(&m.method),
                        format!("`{}` has no method `{other}` in kernels", rust_name(a.ty)),
                    ),
                }
            }
            other => err(
                crate::diag::range(&m.method),
                format!("{} has no method `{name}`", other.describe()),
            ),
        }
    }

    /// `exp`, `ln`, `abs` and `recip` on a scalar; the other math functions are table rows
    /// (`chain.rs`).
    pub(crate) fn math_unary(
        &mut self,
        name: &str,
        a: Scalar,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        if name == "abs" {
            if !(is_float(a.ty) || matches!(a.ty, ScalarType::S32 | ScalarType::S64)) {
                return err(
                    span,
                    format!("`abs` works on signed numbers, not `{}`", rust_name(a.ty)),
                );
            }
            let x = self.materialize(&a);
            let d = self.b.reg(a.ty);
            self.inst(
                Op::Abs {
                    ty: a.ty,
                    ftz: false,
                },
                vec![d.into()],
                vec![x.into()],
            );
            return Ok(Value::Scalar(Scalar::reg(d)));
        }
        if a.ty != ScalarType::F32 {
            let hint = if is_float(a.ty) {
                format!(": convert with `as f32`, call `{name}`, and convert back")
            } else {
                String::new()
            };
            return err(
                span,
                format!(
                    "`{name}` is defined on `f32` in kernels, found `{}`{hint}",
                    rust_name(a.ty)
                ),
            );
        }
        let x = self.materialize(&a);
        let f = ScalarType::F32;
        let unary = |l: &mut Self, op: Op, src: Reg| {
            let d = l.b.reg(f);
            l.inst(op, vec![d.into()], vec![src.into()]);
            d
        };
        let approx = |func| Op::Approx {
            func,
            ty: f,
            ftz: false,
        };
        let scaled = |l: &mut Self, src: Reg, k: f32| {
            let d = l.b.reg(f);
            l.inst(
                Op::Mul {
                    ty: f,
                    mode: None,
                    rnd: Some(Rounding::Rn),
                    ftz: false,
                    sat: false,
                },
                vec![d.into()],
                vec![src.into(), Operand::Imm(Imm::f32(k))],
            );
            d
        };
        let d = match name {
            "exp" => {
                let t = scaled(self, x, LOG2_E);
                unary(self, approx(ApproxFn::Ex2), t)
            }
            "ln" => {
                let t = unary(self, approx(ApproxFn::Lg2), x);
                scaled(self, t, LN_2)
            }
            "recip" => unary(
                self,
                Op::RcpIeee {
                    ty: f,
                    rnd: Rounding::Rn,
                    ftz: false,
                },
                x,
            ),
            other => return err(span, format!("`{other}` is not implemented")),
        };
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    /// `x.load_cg(i)`: one element through L2 only (`ld.global.cg`), so that a value another
    /// block wrote during this kernel is seen (the non-coherent path `&[T]` indexing takes
    /// may serve stale lines).
    fn load_cg(
        &mut self,
        s: &super::value::SliceRef,
        index: &Expr,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let idx = self.index_scalar(index)?;
        let addr = self.global_address(s, &idx)?;
        let d = self.b.reg(s.elem);
        self.span = span;
        self.inst(
            Op::Ld {
                space: StateSpace::Global,
                ty: memory_type(s.elem),
                vec: None,
                nc: false,
                cache: Some(CacheOp::Cg),
            },
            vec![d.into()],
            vec![addr],
        );
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    /// `load4`/`store4` and `load8`/`store8`: 16 bytes of elements of exactly `bits` bits.
    fn fixed_lanes(
        &self,
        s: &super::value::SliceRef,
        lanes: i64,
        bits: u32,
        name: &str,
        span: crate::diag::SpanRange,
    ) -> DResult<i64> {
        if s.elem.bits() != bits || s.elem == ScalarType::Pred {
            let other = if s.elem.bits() == 16 { 8 } else { 4 };
            let verb = &name[..name.len() - 1];
            return err(span, format!(
                "`{name}` moves {lanes} × {bits}-bit elements, but `{}` holds `{}`: use `{verb}{other}`, or `{verb}_vec::<{{ T::VEC }}>` for any element type",
                s.name, rust_name(s.elem)
            ));
        }
        Ok(lanes)
    }

    /// `atomic_add(i, v)`, `atomic_min`, `atomic_max`, `atomic_exch`, `atomic_cas(i, expected, new)`,
    /// `atomic_inc(i, limit)` (the old value; stores `old >= limit ? 0 : old + 1`).
    fn atomic(
        &mut self,
        name: &str,
        space: StateSpace,
        elem: ScalarType,
        addr: Operand,
        args: &[&Expr],
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let op = match name {
            "atomic_add" => AtomOp::Add,
            "atomic_min" => AtomOp::Min,
            "atomic_max" => AtomOp::Max,
            "atomic_exch" => AtomOp::Exch,
            "atomic_and" => AtomOp::And,
            "atomic_or" => AtomOp::Or,
            "atomic_xor" => AtomOp::Xor,
            "atomic_cas" => AtomOp::Cas,
            "atomic_inc" => AtomOp::Inc,
            other => return err(span, format!("unknown atomic `{other}`: kernels have atomic_add, atomic_min, atomic_max, atomic_exch, atomic_and, atomic_or, atomic_xor, atomic_cas, atomic_inc")),
        };
        if op == AtomOp::Inc && elem != ScalarType::U32 {
            return err(
                span,
                format!(
                    "`atomic_inc` counts in `u32` (`atom.inc.u32`), not `{}`",
                    rust_name(elem)
                ),
            );
        }
        let want = if op == AtomOp::Cas { 3 } else { 2 };
        if args.len() != want {
            return err(
                span,
                format!(
                    "`{name}` takes {want} arguments, but {} were supplied",
                    args.len()
                ),
            );
        }
        if matches!(
            op,
            AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Cas | AtomOp::Min | AtomOp::Max
        ) && !is_int(elem)
        {
            return err(
                span,
                format!("`{name}` works on integers, not `{}`", rust_name(elem)),
            );
        }
        let mut srcs = vec![addr];
        for a in &args[1..] {
            let v = self.expr_as(a, elem)?;
            let r = self.materialize(&v);
            srcs.push(r.into());
        }
        let ty = match op {
            AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => {
                super::expr::bits_of(elem)
            }
            _ => memory_type(elem),
        };
        let ty = if matches!(elem, ScalarType::F16 | ScalarType::Bf16) {
            elem
        } else {
            ty
        };
        let d = self.b.reg(elem);
        self.span = span;
        self.inst(Op::Atom { space, op, ty }, vec![d.into()], srcs);
        Ok(Value::Scalar(Scalar::reg(d)))
    }
}
