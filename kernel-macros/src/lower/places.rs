//! Places and memory: `Dim3` fields, slice, shared-array and local-array indexing, addresses,
//! loads and stores (`x[i]`, `x[i] = v`, `v = ...`).

use super::expr::*;
use super::value::*;
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{AddrBase, Dim, Imm, Operand, Reg, SpecialReg};
use kernel_dsl::op::{MulMode, Op};
use kernel_dsl::{ScalarType, StateSpace};
use syn::Expr;

impl Lowerer<'_> {
    pub(crate) fn field(&mut self, f: &syn::ExprField) -> DResult<Value> {
        let base = self.expr(&f.base, None)?;
        if let Value::Tuple(parts) = base {
            return self.tuple_field(parts, &f.member);
        }
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

    /// `&x[start..]` or `&mut y[start..]`: the slice from element `start` on, as a new base
    /// address (a `u64` start gives a 64-bit offset, for batches past 2³² elements). A
    /// shared view of a `&mut` slice is refused: it would load through `.nc`, which may miss
    /// this kernel's own writes.
    pub(crate) fn subslice(&mut self, r: &syn::ExprReference) -> DResult<Value> {
        let Expr::Index(ix) = &*r.expr else {
            return err(
                crate::diag::range(&r),
                "references are not supported inside kernels, but for sub-slices `&x[start..]`: pass slices and arrays by name",
            );
        };
        let Expr::Range(range) = &*ix.index else {
            return err(
                crate::diag::range(&r),
                "references are not supported inside kernels, but for sub-slices `&x[start..]`: pass slices and arrays by name",
            );
        };
        let (Some(start), None) = (&range.start, &range.end) else {
            return err(
                crate::diag::range(&ix.index),
                "a sub-slice runs from a start to the end of its slice: write `&x[start..]` (kernels carry no lengths)",
            );
        };
        let s = match self.expr(&ix.expr, None)? {
            Value::Slice(s) => s,
            other => {
                return err(
                    crate::diag::range(&ix.expr),
                    format!("only slices can be sub-sliced, found {}", other.describe()),
                )
            }
        };
        let mutable = r.mutability.is_some();
        if mutable && !s.mutable {
            return err(
                crate::diag::range(&r),
                format!(
                    "cannot borrow `{}` as mutable: it is a `&[{}]`; declare the parameter `&mut [{}]`",
                    s.name,
                    rust_name(s.elem),
                    rust_name(s.elem)
                ),
            );
        }
        if !mutable && s.mutable {
            return err(
                crate::diag::range(&r),
                format!(
                    "write `&mut {}[start..]`: a shared view of a `&mut` slice would read through the non-coherent path and could miss this kernel's writes",
                    s.name
                ),
            );
        }
        let idx = self.index_scalar(start)?;
        let addr = self.global_address(&s, &idx)?;
        let Operand::Addr {
            base: AddrBase::Reg(at),
            offset,
        } = addr
        else {
            unreachable!("a global address is a register plus an offset")
        };
        let base = if offset == 0 {
            at
        } else {
            let d = self.b.reg(ScalarType::U64);
            self.inst(
                Op::Add {
                    ty: ScalarType::U64,
                    rnd: None,
                    ftz: false,
                    sat: false,
                },
                vec![d.into()],
                vec![at.into(), Operand::Imm(Imm::Int(offset))],
            );
            d
        };
        Ok(Value::Slice(SliceRef {
            name: s.name.clone(),
            base,
            elem: s.elem,
            mutable,
        }))
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

    pub(crate) fn index_load(&mut self, ix: &syn::ExprIndex) -> DResult<Value> {
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

    /// The registers and element type of `e` where it names a `let mut` array.
    pub(crate) fn array_variable(&self, e: &Expr) -> Option<(Vec<Reg>, ScalarType)> {
        let Expr::Path(p) = e else { return None };
        let b = self.lookup(&p.path.get_ident()?.to_string())?;
        match &b.value {
            Value::Array { elems, elem } if b.mutable => Some((elems.clone(), *elem)),
            _ => None,
        }
    }

    /// `a = expr` for a `let mut` array `a`: the whole array at once, of the same length and
    /// element type. Where `expr` is one instruction's fresh results (a vector load, say), the
    /// instruction writes into `a` itself, so no copy follows the load: a value carried
    /// around a loop is then loaded straight into its registers, and `if ok { a = … }`
    /// becomes one predicated load that leaves `a` as it was where `ok` is false.
    pub(crate) fn assign_array(&mut self, place: &Expr, value: &Expr) -> DResult<()> {
        let (to, elem) = self
            .array_variable(place)
            .expect("assign_array is called for array variables");
        let mark = self.b.mark();
        let from = self.expr_array(value, elem, to.len())?;
        self.span = crate::diag::range(&place);
        if self.b.forward_results(mark, &from, &to) {
            for &r in &to {
                self.forget_narrowed(&Operand::Reg(r));
            }
            return Ok(());
        }
        // Copied through fresh registers first, so `a = [a[1], a[0]]` swaps.
        let staged: Vec<Reg> = if from.iter().any(|r| to.contains(r)) {
            from.iter()
                .map(|&r| {
                    let c = self.b.reg(elem);
                    self.mov(c, Scalar::reg(r));
                    c
                })
                .collect()
        } else {
            from
        };
        for (&t, &f) in to.iter().zip(&staged) {
            self.mov(t, Scalar::reg(f));
        }
        Ok(())
    }

    pub(crate) fn is_mutable_name(&self, e: &Expr) -> bool {
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
}
