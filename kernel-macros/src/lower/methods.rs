//! Method-call syntax: float math (`x.exp()`, `a.max(b)`, `x.mul_add(a, b)`), and buffer
//! operations (`x.load4(i)`, `y.store4(i, v)`, `x.load_cg(i)`, `y.atomic_add(i, v)`). Math
//! methods that are rows of `kernel_dsl::intrinsics` lower through `chain.rs`.

use super::expr::{is_float, is_int, memory_type};
use super::value::{Scalar, Value};
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::rust_name;
use kernel_dsl::intrinsics::{self, Lowering};
use kernel_dsl::ir::{Imm, Operand, Reg};
use kernel_dsl::op::{ApproxFn, AtomOp, CacheOp, Op, Rounding};
use kernel_dsl::{ScalarType, StateSpace, VecWidth};
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
                    "load4" | "load8" => {
                        arity(1)?;
                        self.vector_load(&s, args[0], name == "load8", crate::diag::range(&m))
                    }
                    "store4" | "store8" => {
                        arity(2)?;
                        if !s.mutable {
                            return err(crate::diag::range(&m.receiver), format!("cannot write through `{}`: it is a `&[{}]`; declare the parameter `&mut [{}]` to write to it", s.name, rust_name(s.elem), rust_name(s.elem)));
                        }
                        self.vector_store(&s, args[0], args[1], name == "store8", crate::diag::range(&m))
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
                    other => err(crate::diag::range(&m.method), format!("slices in kernels have no method `{other}`: index them, or use load4/store4, load8/store8, load_cg, atomic_*")),
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
                err(
                    crate::diag::range(&m.method),
                    format!("shared arrays have no method `{name}`: index them, or use atomic_*"),
                )
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
                    n if intrinsics::find(n).is_some_and(|i| i.method) => {
                        let intr = intrinsics::find(n).expect("found above");
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

    /// `x.load4(i)` (4 × 32-bit) and `x.load8(i)` (8 × 16-bit): one 16-byte load of elements
    /// `i..i+N`; `i` must be a multiple of N.
    fn vector_load(
        &mut self,
        s: &super::value::SliceRef,
        index: &Expr,
        eight: bool,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let (lanes, bits) = if eight { (8, 16) } else { (4, 32) };
        if s.elem.bits() != bits || s.elem == ScalarType::Pred {
            return err(span, format!(
                "`load{lanes}` loads {lanes} × {bits}-bit elements, but `{}` holds `{}`: use `load{}`",
                s.name, rust_name(s.elem), if s.elem.bits() == 16 { 8 } else { 4 }
            ));
        }
        let idx = self.index_scalar(index)?;
        let addr = self.global_address(s, &idx)?;
        self.span = span;
        if !eight {
            let regs: Vec<Reg> = (0..4).map(|_| self.b.reg(s.elem)).collect();
            self.inst(
                Op::Ld {
                    space: StateSpace::Global,
                    ty: s.elem,
                    vec: Some(VecWidth::V4),
                    nc: !s.mutable,
                    cache: None,
                },
                vec![Operand::Vector(regs.iter().map(|r| (*r).into()).collect())],
                vec![addr],
            );
            return Ok(Value::Array {
                elems: regs,
                elem: s.elem,
            });
        }
        let words: Vec<Reg> = (0..4).map(|_| self.b.reg(ScalarType::U32)).collect();
        self.inst(
            Op::Ld {
                space: StateSpace::Global,
                ty: ScalarType::B32,
                vec: Some(VecWidth::V4),
                nc: !s.mutable,
                cache: None,
            },
            vec![Operand::Vector(words.iter().map(|r| (*r).into()).collect())],
            vec![addr],
        );
        let mut elems = Vec::new();
        for w in words {
            for half in 0..2 {
                let src = if half == 0 {
                    w
                } else {
                    let t = self.b.reg(ScalarType::U32);
                    self.inst(
                        Op::Shr {
                            ty: ScalarType::U32,
                        },
                        vec![t.into()],
                        vec![w.into(), Operand::Imm(Imm::Int(16))],
                    );
                    t
                };
                let narrow = self.b.reg(ScalarType::U16);
                self.inst(
                    Op::Cvt {
                        dst: ScalarType::U16,
                        src: ScalarType::U32,
                        rnd: None,
                        ftz: false,
                        sat: false,
                        relu: false,
                    },
                    vec![narrow.into()],
                    vec![src.into()],
                );
                let h = self.b.reg(s.elem);
                self.inst(
                    Op::Mov {
                        ty: ScalarType::B16,
                    },
                    vec![h.into()],
                    vec![narrow.into()],
                );
                elems.push(h);
            }
        }
        Ok(Value::Array {
            elems,
            elem: s.elem,
        })
    }

    fn vector_store(
        &mut self,
        s: &super::value::SliceRef,
        index: &Expr,
        value: &Expr,
        eight: bool,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let (lanes, bits) = if eight { (8, 16) } else { (4, 32) };
        if s.elem.bits() != bits {
            return err(
                span,
                format!(
                    "`store{lanes}` stores {lanes} × {bits}-bit elements, but `{}` holds `{}`",
                    s.name,
                    rust_name(s.elem)
                ),
            );
        }
        let v = self.expr(value, Some(s.elem))?;
        let elems = match v {
            Value::Array { elems, elem } if elem == s.elem && elems.len() == lanes => elems,
            other => {
                return err(
                    crate::diag::range(&value),
                    format!(
                        "expected `[{}; {lanes}]`, found {}",
                        rust_name(s.elem),
                        other.describe()
                    ),
                )
            }
        };
        let idx = self.index_scalar(index)?;
        let addr = self.global_address(s, &idx)?;
        self.span = span;
        let (ty, regs) = if eight {
            let words = elems
                .chunks(2)
                .map(|pair| {
                    let w = self.b.reg(ScalarType::B32);
                    self.inst(
                        Op::Mov {
                            ty: ScalarType::B32,
                        },
                        vec![w.into()],
                        vec![Operand::Vector(vec![pair[0].into(), pair[1].into()])],
                    );
                    w
                })
                .collect::<Vec<_>>();
            (ScalarType::B32, words)
        } else {
            (s.elem, elems)
        };
        self.inst(
            Op::St {
                space: StateSpace::Global,
                ty,
                vec: Some(VecWidth::V4),
                cache: None,
            },
            vec![],
            vec![
                addr,
                Operand::Vector(regs.iter().map(|r| (*r).into()).collect()),
            ],
        );
        Ok(Value::Unit)
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
