//! Vector access whose width follows the element type. `x.load_vec::<W>(i)` reads elements
//! `i..i+W` in one access and returns `[T; W]`; `x.load_vec_or::<W>(i, ok, fill)` reads only
//! where `ok` holds (a predicated load; the lanes are `fill` otherwise); `y.store_vec::<W>(i, v)`
//! writes them back. `W · size_of::<T>()` is 2, 4, 8 or 16 bytes (or W = 1), and `i` must be a
//! multiple of `W` so that the access is aligned. `load4`/`store4` (32-bit) and `load8`/`store8`
//! (16-bit) are the 16-byte forms under fixed names. A shared array has `load_vec` too (one
//! `ld.shared`), for data staged there by `cp_async_16`. `x.load_words::<N>(i)`,
//! `x.load_words_or::<N>(i, ok)` and `y.store_words::<N>(i, w)` move the same bytes as `[u32; N]`
//! without splitting them into elements.

use super::expr::memory_type;
use super::value::{SharedRef, SliceRef, Value};
use super::Lowerer;
use crate::diag::{err, DResult, SpanRange};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{Guard, Operand, Reg};
use kernel_dsl::op::{CacheOp, CvtRounding, Op};
use kernel_dsl::{ScalarType, StateSpace, VecWidth};
use syn::Expr;

/// How `lanes` elements travel: `words` memory words of type `word`, `per_word` elements each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    lanes: usize,
    word: ScalarType,
    words: usize,
}

impl Access {
    fn per_word(self) -> usize {
        self.lanes / self.words
    }

    fn width(self) -> Option<VecWidth> {
        match self.words {
            1 => None,
            2 => Some(VecWidth::V2),
            _ => Some(VecWidth::V4),
        }
    }
}

/// The access for `lanes` elements of `elem`, or why there is none.
fn access(elem: ScalarType, lanes: i64) -> Result<Access, String> {
    let bytes = elem.bytes() as i64;
    let total = lanes * bytes;
    if elem == ScalarType::Pred || !(lanes == 1 || matches!(total, 2 | 4 | 8 | 16)) {
        return Err(format!(
            "a vector of {lanes} × `{t}` is {total} bytes, but one access moves 2, 4, 8 or 16: W must be a power of two no larger than `{t}::VEC` ({})",
            16 / bytes.max(1),
            t = rust_name(elem),
        ));
    }
    let lanes = lanes as usize;
    Ok(if bytes == 2 && lanes >= 2 {
        // Pairs of 16-bit values travel as 32-bit words and are split in registers.
        Access {
            lanes,
            word: ScalarType::B32,
            words: lanes / 2,
        }
    } else {
        Access {
            lanes,
            word: memory_type(elem),
            words: lanes,
        }
    })
}

/// Where a vector access goes: a global slice, or a shared array (`tile.load_vec::<4>(i)`,
/// `ld.shared.v4`; the same widths and alignment rule, counted from the array's start).
#[derive(Clone, Copy)]
pub(crate) enum VecPlace<'a> {
    Global(&'a SliceRef),
    Shared(&'a SharedRef),
}

impl VecPlace<'_> {
    fn elem(self) -> ScalarType {
        match self {
            VecPlace::Global(s) => s.elem,
            VecPlace::Shared(a) => a.elem,
        }
    }

    fn space(self) -> StateSpace {
        match self {
            VecPlace::Global(_) => StateSpace::Global,
            VecPlace::Shared(_) => StateSpace::Shared,
        }
    }

    /// Read-only global slices load through the non-coherent path.
    fn nc(self) -> bool {
        matches!(self, VecPlace::Global(s) if !s.mutable)
    }
}

impl Lowerer<'_> {
    /// The address of element `idx` of a vector access's place.
    fn vec_address(
        &mut self,
        place: VecPlace,
        idx: &super::value::Scalar,
        span: SpanRange,
    ) -> DResult<Operand> {
        match place {
            VecPlace::Global(s) => self.global_address(s, idx),
            VecPlace::Shared(a) => self.shared_address(a, idx, span),
        }
    }

    /// The vector width a `::<W>` turbofish names (a literal, a const generic, `T::VEC`, or a
    /// `{ … }` constant expression).
    pub(crate) fn vector_lanes(
        &mut self,
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
        span: SpanRange,
    ) -> DResult<i64> {
        self.turbofish_constant(
            turbofish,
            span,
            "give the vector width as a constant: `x.load_vec::<4>(i)` or `x.load_vec::<{ T::VEC }>(i)`",
        )
    }

    /// The one constant a method's `::<N>` turbofish names; `missing` is the error otherwise.
    fn turbofish_constant(
        &mut self,
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
        span: SpanRange,
        missing: &str,
    ) -> DResult<i64> {
        let args: Vec<_> = turbofish
            .map(|t| t.args.iter().collect())
            .unwrap_or_default();
        match args.as_slice() {
            [a] => self.const_generic_arg(a),
            _ => err(span, missing),
        }
    }

    /// `x.load_vec::<W>(i)`, or with `guard` = (`ok`, `fill`) `x.load_vec_or::<W>(i, ok, fill)`.
    pub(crate) fn vector_load(
        &mut self,
        place: VecPlace,
        lanes: i64,
        index: &Expr,
        guard: Option<(&Expr, &Expr)>,
        cache: Option<CacheOp>,
        span: SpanRange,
    ) -> DResult<Value> {
        let elem = place.elem();
        let a = access(elem, lanes).map_err(|m| crate::diag::Diag::new(span, m))?;
        let idx = self.index_scalar(index)?;
        let addr = self.vec_address(place, &idx, crate::diag::range(index))?;
        let guard = match guard {
            None => None,
            Some((ok, fill)) => {
                let ok = self.expr_as(ok, ScalarType::Pred)?;
                let fill = self.expr_as(fill, elem)?;
                Some((ok, fill))
            }
        };
        self.span = span;
        let words: Vec<Reg> = (0..a.words)
            .map(|_| {
                self.b.reg(if a.word == ScalarType::B32 {
                    ScalarType::U32
                } else {
                    elem
                })
            })
            .collect();
        let pred = match guard {
            None => None,
            Some((ok, fill)) => {
                if let Some(k) = ok.const_int() {
                    if k == 0 {
                        // Never read: every lane is its own copy of the fill.
                        let elems = (0..a.lanes)
                            .map(|_| {
                                let r = self.b.reg(elem);
                                self.mov(r, fill.clone());
                                r
                            })
                            .collect();
                        return Ok(Value::Array { elems, elem });
                    }
                    None
                } else {
                    let f = self.materialize(&fill);
                    for &w in &words {
                        let src = if a.per_word() == 2 {
                            Operand::Vector(vec![f.into(), f.into()])
                        } else {
                            f.into()
                        };
                        self.inst(Op::Mov { ty: a.word }, vec![w.into()], vec![src]);
                    }
                    Some(self.materialize(&ok))
                }
            }
        };
        self.load_into(place, a, &words, addr, pred, cache);
        if a.per_word() == 1 {
            return Ok(Value::Array { elems: words, elem });
        }
        let elems = words
            .into_iter()
            .flat_map(|w| self.halves_of(w, elem))
            .collect();
        Ok(Value::Array { elems, elem })
    }

    /// One `st` of `regs` (a word each, or one scalar) at `addr`: `a`'s width and word type.
    fn store_from(&mut self, place: VecPlace<'_>, a: Access, addr: Operand, regs: &[Reg]) {
        let src = words_operand(regs);
        self.inst(
            Op::St {
                space: place.space(),
                ty: a.word,
                vec: a.width(),
                cache: None,
            },
            vec![],
            vec![addr, src],
        );
    }

    /// One `ld` of `a.words` words into `words`, predicated on `pred` where there is one.
    fn load_into(
        &mut self,
        place: VecPlace,
        a: Access,
        words: &[Reg],
        addr: Operand,
        pred: Option<Reg>,
        cache: Option<CacheOp>,
    ) {
        let op = Op::Ld {
            space: place.space(),
            ty: a.word,
            vec: a.width(),
            nc: place.nc(),
            cache,
        };
        let dst = words_operand(words);
        match pred {
            Some(p) => {
                self.op_spans.push((op, self.span));
                self.mark_loc();
                self.b.inst_guarded(
                    Guard {
                        pred: p,
                        negated: false,
                    },
                    op,
                    vec![dst],
                    vec![addr],
                );
            }
            None => self.inst(op, vec![dst], vec![addr]),
        }
    }

    /// The word count a `::<N>` turbofish of `load_words`/`store_words` names: 1, 2 or 4.
    pub(crate) fn word_count(
        &mut self,
        method: &str,
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
        span: SpanRange,
    ) -> DResult<Access> {
        let missing = format!("give the word count as a constant: `x.{method}::<4>(i)`");
        let n = self.turbofish_constant(turbofish, span, &missing)?;
        if !matches!(n, 1 | 2 | 4) {
            return err(
                span,
                format!(
                    "`{method}` moves 1, 2 or 4 words (4, 8 or 16 bytes) in one access, not {n}"
                ),
            );
        }
        Ok(Access {
            lanes: n as usize,
            word: ScalarType::B32,
            words: n as usize,
        })
    }

    /// `x.load_words::<N>(i)`, or with `ok` `x.load_words_or::<N>(i, ok)`: the `4·N` bytes
    /// from element `i` on as `[u32; N]`, unsplit whatever the element type (bf16 data held
    /// as pairs the way the builder's kernels hold it). Zero words where `ok` is false.
    pub(crate) fn words_load(
        &mut self,
        s: &SliceRef,
        a: Access,
        index: &Expr,
        ok: Option<&Expr>,
        span: SpanRange,
    ) -> DResult<Value> {
        let place = VecPlace::Global(s);
        let idx = self.index_scalar(index)?;
        let addr = self.vec_address(place, &idx, crate::diag::range(index))?;
        let ok = match ok {
            Some(e) => Some(self.expr_as(e, ScalarType::Pred)?),
            None => None,
        };
        self.span = span;
        let words: Vec<Reg> = (0..a.words).map(|_| self.b.reg(ScalarType::U32)).collect();
        // A guard not known to hold zero-fills the words first; one known to fail reads nothing.
        let never = ok.as_ref().is_some_and(|ok| ok.const_int() == Some(0));
        let guarded = ok.filter(|ok| ok.const_int().is_none());
        if never || guarded.is_some() {
            for &w in &words {
                self.inst(
                    Op::Mov {
                        ty: ScalarType::B32,
                    },
                    vec![w.into()],
                    vec![Operand::Imm(kernel_dsl::ir::Imm::Int(0))],
                );
            }
        }
        if never {
            return Ok(Value::Array {
                elems: words,
                elem: ScalarType::U32,
            });
        }
        let pred = guarded.map(|ok| self.materialize(&ok));
        self.load_into(place, a, &words, addr, pred, None);
        Ok(Value::Array {
            elems: words,
            elem: ScalarType::U32,
        })
    }

    /// `y.store_words::<N>(i, w)` with `w: [u32; N]`: the bytes of `w` at element `i` on.
    pub(crate) fn words_store(
        &mut self,
        s: &SliceRef,
        a: Access,
        index: &Expr,
        value: &Expr,
        span: SpanRange,
    ) -> DResult<Value> {
        let regs = self.expr_array(value, ScalarType::U32, a.words)?;
        let place = VecPlace::Global(s);
        let idx = self.index_scalar(index)?;
        let addr = self.vec_address(place, &idx, crate::diag::range(index))?;
        self.span = span;
        self.store_from(place, a, addr, &regs);
        Ok(Value::Unit)
    }

    /// The low and high 16 bits of a 32-bit word, as two values of `elem`: one unpacking
    /// `mov.b32 {lo, hi}, w`, which ptxas folds into whatever reads the halves (a widening to
    /// f32 becomes one shift or mask).
    fn halves_of(&mut self, w: Reg, elem: ScalarType) -> [Reg; 2] {
        let (lo, hi) = (self.b.reg(elem), self.b.reg(elem));
        self.inst(
            Op::Mov {
                ty: ScalarType::B32,
            },
            vec![Operand::Vector(vec![lo.into(), hi.into()])],
            vec![w.into()],
        );
        [lo, hi]
    }

    /// `e` lowered as a `[elem; len]`, its registers in order; any other value is an error at
    /// `e` that names what was expected.
    pub(crate) fn expr_array(
        &mut self,
        e: &Expr,
        elem: ScalarType,
        len: usize,
    ) -> DResult<Vec<Reg>> {
        match self.expr(e, Some(elem))? {
            Value::Array { elems, elem: got } if got == elem && elems.len() == len => Ok(elems),
            other => err(
                crate::diag::range(&e),
                format!(
                    "expected `[{}; {len}]`, found {}",
                    rust_name(elem),
                    other.describe()
                ),
            ),
        }
    }

    /// `y.store_vec::<W>(i, v)` with `v: [T; W]`.
    pub(crate) fn vector_store(
        &mut self,
        place: VecPlace,
        lanes: i64,
        index: &Expr,
        value: &Expr,
        span: SpanRange,
    ) -> DResult<Value> {
        let elem = place.elem();
        let a = access(elem, lanes).map_err(|m| crate::diag::Diag::new(span, m))?;
        let elems = self.expr_array(value, elem, a.lanes)?;
        let idx = self.index_scalar(index)?;
        let addr = self.vec_address(place, &idx, crate::diag::range(index))?;
        self.span = span;
        let regs: Vec<Reg> = if a.per_word() == 2 {
            elems
                .chunks(2)
                .map(|pair| {
                    let w = self.b.reg(ScalarType::B32);
                    let sources = (self.narrowed_from(pair[0]), self.narrowed_from(pair[1]));
                    if let (Some(lo), Some(hi)) = sources {
                        // Both halves are f32 values just rounded to bf16: round them as a
                        // pair, one instruction instead of two conversions and a pack.
                        self.inst(
                            Op::Cvt {
                                dst: ScalarType::Bf16x2,
                                src: ScalarType::F32,
                                rnd: Some(CvtRounding::Rn),
                                ftz: false,
                                sat: false,
                                relu: false,
                            },
                            vec![w.into()],
                            vec![hi.into(), lo.into()],
                        );
                        return w;
                    }
                    self.inst(
                        Op::Mov {
                            ty: ScalarType::B32,
                        },
                        vec![w.into()],
                        vec![Operand::Vector(vec![pair[0].into(), pair[1].into()])],
                    );
                    w
                })
                .collect()
        } else {
            elems
        };
        self.store_from(place, a, addr, &regs);
        Ok(Value::Unit)
    }
}

/// The operand of an access's words: the register itself for one, a `{…}` vector otherwise.
fn words_operand(words: &[Reg]) -> Operand {
    match words {
        [w] => (*w).into(),
        _ => Operand::Vector(words.iter().map(|r| (*r).into()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::access;
    use kernel_dsl::ScalarType;

    #[test]
    fn sixteen_bit_pairs_travel_as_words_and_wider_types_as_themselves() {
        let a = access(ScalarType::Bf16, 8).unwrap();
        assert_eq!((a.word, a.words), (ScalarType::B32, 4));
        let a = access(ScalarType::F16, 1).unwrap();
        assert_eq!((a.word, a.words), (ScalarType::B16, 1));
        let a = access(ScalarType::F32, 2).unwrap();
        assert_eq!((a.word, a.words), (ScalarType::F32, 2));
        let a = access(ScalarType::F64, 2).unwrap();
        assert_eq!((a.word, a.words), (ScalarType::F64, 2));
    }

    #[test]
    fn widths_past_sixteen_bytes_or_not_a_power_of_two_are_refused() {
        assert!(access(ScalarType::F32, 8)
            .unwrap_err()
            .contains("no larger than `f32::VEC` (4)"));
        assert!(access(ScalarType::Bf16, 3).is_err());
        assert!(access(ScalarType::F64, 4).is_err());
    }
}
