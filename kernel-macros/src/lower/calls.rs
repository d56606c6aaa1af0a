//! Free-function intrinsics and calls to `#[device]` helpers, which are inlined. Which
//! intrinsics exist, and their arity, is `kernel_dsl::intrinsics`; the table's `Chain` rows
//! lower in `chain.rs`, and the rest (thread coordinates, barriers, shuffles, votes, shared
//! memory, tensor-core and async-copy intrinsics, math over several types) here.

use super::expr::{is_float, is_int};
use super::value::{Binding, Dim3Kind, Scalar, SharedRef, SliceRef, Value};
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::{rust_name, scalar_of};
use kernel_dsl::intrinsics::{self, Lowering};
use kernel_dsl::ir::{AddrBase, Imm, Operand, SpecialReg};
use kernel_dsl::op::{BarRedOp, CacheOp, MatrixCount, Op, ReduxOp, ShflMode, VoteMode};
use kernel_dsl::ScalarType;
use syn::{Expr, ExprCall};

/// Math functions lowered by hand that are also methods of numbers (`x.exp()` or `exp(x)`);
/// `recip` is a method only, as on Rust's `f32`. The other math methods are the table's
/// rows marked `method`.
pub const MATH_UNARY: &[&str] = &["exp", "ln", "abs", "recip"];

impl Lowerer<'_> {
    pub(crate) fn call(&mut self, c: &ExprCall, expected: Option<ScalarType>) -> DResult<Value> {
        let Expr::Path(p) = &*c.func else {
            return err(
                crate::diag::range(&c.func),
                "only named functions can be called in kernels",
            );
        };
        let last = p.path.segments.last().expect("a path has a segment");
        let name = last.ident.to_string();
        if p.path.segments.len() == 2 {
            // `O::apply(v)` with `O` an op type parameter: the method of the type it stands
            // for in this instance.
            let param = p.path.segments[0].ident.to_string();
            if let Some(ty) = self.spec.ops.get(&param) {
                let method = crate::expand::op_method_name(ty, &name);
                return match self.device(&method) {
                    Some(device) => self.inline_device(device, c, expected),
                    None => err(
                        crate::diag::range(&c.func),
                        format!("`{ty}` has no `#[device]` method `{name}`: mark its `impl` with `#[device]`"),
                    ),
                };
            }
        }
        if let Some(device) = self.device(&name) {
            return self.inline_device(device, c, expected);
        }
        let Some(intr) = intrinsics::find(&name) else {
            return err(crate::diag::range(&c.func), format!(
                "cannot find function `{name}` for kernels: call an intrinsic from `ptxkit::prelude`, or mark `{name}` with `#[device]` and bring it into scope"
            ));
        };
        let arity = intr.params.len();
        if c.args.len() != arity {
            return err(
                crate::diag::range(&c),
                format!(
                    "`{name}` takes {arity} argument{}, but {} {} supplied",
                    if arity == 1 { "" } else { "s" },
                    c.args.len(),
                    if c.args.len() == 1 { "was" } else { "were" }
                ),
            );
        }
        let args: Vec<&Expr> = c.args.iter().collect();
        if let Lowering::Chain(ops) = intr.lowering {
            return self.chain_call(intr, ops, &args, crate::diag::range(&c));
        }
        let unit = Ok(Value::Unit);
        match name.as_str() {
            "thread_idx" => Ok(Value::Dim3(Dim3Kind::ThreadIdx)),
            "block_idx" => Ok(Value::Dim3(Dim3Kind::BlockIdx)),
            "block_dim" => Ok(Value::Dim3(Dim3Kind::BlockDim)),
            "grid_dim" => Ok(Value::Dim3(Dim3Kind::GridDim)),
            "lane_id" => Ok(Value::Scalar(self.special(SpecialReg::LaneId))),
            "sync_threads" => {
                self.inst(Op::BarSync, vec![], vec![Operand::Imm(Imm::Int(0))]);
                unit
            }
            "sync_warp" => {
                self.inst(
                    Op::BarWarpSync,
                    vec![],
                    vec![Operand::Imm(Imm::Int(0xffff_ffff))],
                );
                unit
            }
            "sync_threads_or" | "sync_threads_and" | "sync_threads_count" => {
                let p = self.expr_as(args[0], ScalarType::Pred)?;
                let p = self.materialize(&p);
                let op = match name.as_str() {
                    "sync_threads_or" => BarRedOp::Or,
                    "sync_threads_and" => BarRedOp::And,
                    _ => BarRedOp::Popc,
                };
                let d = self.b.reg(op.result());
                self.inst(
                    Op::BarRed { op },
                    vec![d.into()],
                    vec![Operand::Imm(Imm::Int(0)), p.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "shfl_down" | "shfl_up" | "shfl_xor" | "shfl_idx" => {
                let mode = match name.as_str() {
                    "shfl_down" => ShflMode::Down,
                    "shfl_up" => ShflMode::Up,
                    "shfl_xor" => ShflMode::Bfly,
                    _ => ShflMode::Idx,
                };
                let v = self.expr_scalar(args[0], expected)?;
                if v.ty.bits() != 32 {
                    return err(
                        crate::diag::range(&args[0]),
                        format!(
                            "warp shuffles move 32-bit values (u32, i32, f32), not `{}`",
                            rust_name(v.ty)
                        ),
                    );
                }
                let lane = self.expr_as(args[1], ScalarType::U32)?;
                let v = self.materialize(&v);
                let d = self.b.reg(v.ty);
                let clamp = if mode == ShflMode::Up { 0 } else { 31 };
                let lane = self.src(&lane);
                self.inst(
                    Op::Shfl { mode },
                    vec![d.into()],
                    vec![
                        v.into(),
                        lane,
                        Operand::Imm(Imm::Int(clamp)),
                        Operand::Imm(Imm::Int(-1)),
                    ],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "vote_all" | "vote_any" | "ballot" => {
                let p = self.expr_as(args[0], ScalarType::Pred)?;
                let p = self.materialize(&p);
                let (mode, ty) = match name.as_str() {
                    "vote_all" => (VoteMode::All, ScalarType::Pred),
                    "vote_any" => (VoteMode::Any, ScalarType::Pred),
                    _ => (VoteMode::Ballot, ScalarType::U32),
                };
                let d = self.b.reg(ty);
                self.inst(
                    Op::Vote { mode },
                    vec![d.into()],
                    vec![p.into(), Operand::Imm(Imm::Int(-1))],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            n if n.starts_with("warp_reduce_") => {
                let op = match &n["warp_reduce_".len()..] {
                    "add" => ReduxOp::Add,
                    "min" => ReduxOp::Min,
                    "max" => ReduxOp::Max,
                    "and" => ReduxOp::And,
                    "or" => ReduxOp::Or,
                    _ => ReduxOp::Xor,
                };
                let v = self.expr_scalar(args[0], Some(ScalarType::U32))?;
                if !matches!(v.ty, ScalarType::U32 | ScalarType::S32) {
                    return err(crate::diag::range(&args[0]), format!("`{n}` reduces u32 or i32 (the hardware's `redux.sync`), not `{}`; reduce floats with `shfl_xor`", rust_name(v.ty)));
                }
                let ty = if matches!(op, ReduxOp::And | ReduxOp::Or | ReduxOp::Xor) {
                    ScalarType::B32
                } else {
                    v.ty
                };
                let r = self.materialize(&v);
                let d = self.b.reg(v.ty);
                self.inst(
                    Op::Redux { op, ty },
                    vec![d.into()],
                    vec![r.into(), Operand::Imm(Imm::Int(-1))],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "fma" => {
                let a = self.expr_scalar(args[0], expected.or(Some(ScalarType::F32)))?;
                self.fma(a, args[1], args[2])
            }
            "min" | "max" => {
                let a = self.expr_scalar(args[0], expected)?;
                self.min_max(name == "min", a, args[1])
            }
            n if super::calls::MATH_UNARY.contains(&n) => {
                let a = self.expr_scalar(args[0], expected.or(Some(ScalarType::F32)))?;
                self.math_unary(n, a, crate::diag::range(&args[0]))
            }
            "shared_array" => self.shared_decl(c, last, false),
            "dynamic_shared" => self.shared_decl(c, last, true),
            "f16_bits_to_f32" => {
                // The low half of the word into a 16-bit register, then the exact widening
                // conversion the target has had since sm_53 (`cvt.f32.f16`).
                let v = self.expr_as(args[0], ScalarType::U32)?;
                let word = self.materialize(&v);
                let bits = self.b.reg(ScalarType::U16);
                self.inst(
                    Op::Cvt {
                        dst: ScalarType::U16,
                        src: ScalarType::U32,
                        rnd: None,
                        ftz: false,
                        sat: false,
                        relu: false,
                    },
                    vec![bits.into()],
                    vec![word.into()],
                );
                let half = self.b.reg(ScalarType::F16);
                self.inst(
                    Op::Mov {
                        ty: ScalarType::B16,
                    },
                    vec![half.into()],
                    vec![bits.into()],
                );
                Ok(Value::Scalar(
                    self.convert(Scalar::reg(half), ScalarType::F32)?,
                ))
            }
            "fma_bf16x2" => {
                // The words are moved into bf16x2 registers (free after ptxas) so that the
                // IR's operands carry the type the instruction reads.
                let mut srcs = Vec::with_capacity(3);
                for arg in args.iter().take(3) {
                    let v = self.expr_as(arg, ScalarType::U32)?;
                    let word = self.materialize(&v);
                    let pair = self.b.reg(ScalarType::Bf16x2);
                    self.inst(
                        Op::Mov {
                            ty: ScalarType::B32,
                        },
                        vec![pair.into()],
                        vec![word.into()],
                    );
                    srcs.push(pair.into());
                }
                let pair = self.b.reg(ScalarType::Bf16x2);
                self.inst(
                    Op::Fma {
                        ty: ScalarType::Bf16x2,
                        rnd: kernel_dsl::op::Rounding::Rn,
                        ftz: false,
                        sat: false,
                    },
                    vec![pair.into()],
                    srcs,
                );
                let d = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Mov {
                        ty: ScalarType::B32,
                    },
                    vec![d.into()],
                    vec![pair.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "pack_e4m3x2" | "pack_e5m2x2" => {
                let to = if name == "pack_e4m3x2" {
                    kernel_dsl::op::Fp8::E4m3
                } else {
                    kernel_dsl::op::Fp8::E5m2
                };
                let hi = self.expr_as(args[0], ScalarType::F32)?;
                let lo = self.expr_as(args[1], ScalarType::F32)?;
                let (hi, lo) = (self.materialize(&hi), self.materialize(&lo));
                let packed = self.b.reg(ScalarType::B16);
                self.inst(
                    Op::CvtPackFp8 { to },
                    vec![packed.into()],
                    vec![hi.into(), lo.into()],
                );
                let d = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Cvt {
                        dst: ScalarType::U32,
                        src: ScalarType::U16,
                        rnd: None,
                        ftz: false,
                        sat: false,
                        relu: false,
                    },
                    vec![d.into()],
                    vec![packed.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "pack_bf16x2" | "pack_f16x2" => {
                let pair = if name == "pack_bf16x2" {
                    ScalarType::Bf16x2
                } else {
                    ScalarType::F16x2
                };
                let hi = self.expr_as(args[0], ScalarType::F32)?;
                let lo = self.expr_as(args[1], ScalarType::F32)?;
                let (hi, lo) = (self.materialize(&hi), self.materialize(&lo));
                let packed = self.b.reg(pair);
                self.inst(
                    Op::Cvt {
                        dst: pair,
                        src: ScalarType::F32,
                        rnd: Some(kernel_dsl::op::CvtRounding::Rn),
                        ftz: false,
                        sat: false,
                        relu: false,
                    },
                    vec![packed.into()],
                    vec![hi.into(), lo.into()],
                );
                let d = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Mov {
                        ty: ScalarType::B32,
                    },
                    vec![d.into()],
                    vec![packed.into()],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "ldmatrix_x4" | "ldmatrix_x2" | "ldmatrix_x4_trans" | "ldmatrix_x2_trans" => {
                let (count, n) = if name.contains("x4") {
                    (MatrixCount::X4, 4)
                } else {
                    (MatrixCount::X2, 2)
                };
                let trans = name.ends_with("_trans");
                let tile = self.shared_arg(args[0])?;
                let idx = self.index_scalar(args[1])?;
                let addr = self.shared_address(&tile, &idx, crate::diag::range(&args[1]))?;
                let addr = self.addr_reg32(addr);
                let regs: Vec<_> = (0..n).map(|_| self.b.reg(ScalarType::U32)).collect();
                self.inst(
                    Op::Ldmatrix { count, trans },
                    vec![Operand::Vector(regs.iter().map(|r| (*r).into()).collect())],
                    vec![Operand::Addr {
                        base: AddrBase::Reg(addr),
                        offset: 0,
                    }],
                );
                Ok(Value::Array {
                    elems: regs,
                    elem: ScalarType::U32,
                })
            }
            "mma_m16n8k16_bf16" | "mma_m16n8k16_f16" | "mma_m16n8k8_tf32" | "mma_m16n8k32_s8"
            | "mma_m16n8k32_u8_s8" => {
                // The instruction, shape and types included, is the intrinsic's row.
                let [op @ Op::Mma { c: acc_ty, .. }] = *intr.ops() else {
                    unreachable!("`{name}` lowers to one `mma`")
                };
                let a = self.expr_array(args[0], ScalarType::U32, 4)?;
                let b = self.expr_array(args[1], ScalarType::U32, 2)?;
                let acc = self.expr_array(args[2], acc_ty, 4)?;
                let d: Vec<_> = (0..4).map(|_| self.b.reg(acc_ty)).collect();
                let vec_of = |rs: &[kernel_dsl::ir::Reg]| {
                    Operand::Vector(rs.iter().map(|r| Operand::Reg(*r)).collect())
                };
                self.inst(
                    op,
                    vec![vec_of(&d)],
                    vec![vec_of(&a), vec_of(&b), vec_of(&acc)],
                );
                Ok(Value::Array {
                    elems: d,
                    elem: acc_ty,
                })
            }
            "prefetch_l2" => {
                let src = self.global_slice_arg(args[0], "`prefetch_l2` asks for lines of")?;
                let index = self.index_scalar(args[1])?;
                let addr = self.global_address(&src, &index)?;
                self.span = crate::diag::range(&c);
                self.inst(Op::PrefetchL2, vec![], vec![addr]);
                unit
            }
            "cp_async_16" | "cp_async_16_or" => {
                let tile = self.shared_arg(args[0])?;
                let di = self.index_scalar(args[1])?;
                let dst = self.shared_address(&tile, &di, crate::diag::range(&args[1]))?;
                let dst = self.addr_reg32(dst);
                let src = self.global_slice_arg(args[2], "`cp_async_16` copies from")?;
                let si = self.index_scalar(args[3])?;
                let guard = if name == "cp_async_16_or" {
                    Some(self.expr_as(args[4], ScalarType::Pred)?)
                } else {
                    None
                };
                let Some(ok) = guard else {
                    let src_addr = self.global_address(&src, &si)?;
                    self.span = crate::diag::range(&c);
                    self.inst(
                        Op::CpAsync {
                            cache: CacheOp::Cg,
                            bytes: 16,
                            zero_fill: false,
                        },
                        vec![],
                        vec![
                            Operand::Addr {
                                base: AddrBase::Reg(dst),
                                offset: 0,
                            },
                            src_addr,
                            Operand::Imm(Imm::Int(16)),
                        ],
                    );
                    return unit;
                };
                // Where `ok` fails the copy reads nothing (a source size of 0), and its
                // address is the slice's start, which is valid whatever `src_index` was.
                let ok = self.materialize(&ok);
                let si = self.materialize(&si);
                let at = self.b.reg(si.ty);
                let size = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Selp { ty: si.ty },
                    vec![at.into()],
                    vec![si.into(), Operand::Imm(Imm::Int(0)), ok.into()],
                );
                self.inst(
                    Op::Selp {
                        ty: ScalarType::U32,
                    },
                    vec![size.into()],
                    vec![
                        Operand::Imm(Imm::Int(16)),
                        Operand::Imm(Imm::Int(0)),
                        ok.into(),
                    ],
                );
                let src_addr = self.global_address(&src, &Scalar::reg(at))?;
                self.span = crate::diag::range(&c);
                self.inst(
                    Op::CpAsync {
                        cache: CacheOp::Cg,
                        bytes: 16,
                        zero_fill: true,
                    },
                    vec![],
                    vec![
                        Operand::Addr {
                            base: AddrBase::Reg(dst),
                            offset: 0,
                        },
                        src_addr,
                        Operand::Imm(Imm::Int(16)),
                        size.into(),
                    ],
                );
                unit
            }
            "cp_async_commit" => {
                self.inst(Op::CpAsyncCommit, vec![], vec![]);
                unit
            }
            "cp_async_wait" => {
                let n = self.const_eval(args[0])?;
                self.span = crate::diag::range(&c);
                self.inst(Op::CpAsyncWait, vec![], vec![Operand::Imm(Imm::Int(n))]);
                unit
            }
            n if super::hopper::HOPPER.contains(&n) => self.hopper_call(n, c),
            n if super::cluster::CLUSTER.contains(&n) => self.cluster_call(n, c),
            other => err(
                crate::diag::range(&c),
                format!("`{other}` is not implemented"),
            ),
        }
    }

    /// An address operand as a 32-bit register (for instructions that take `[reg]` only).
    fn addr_reg32(&mut self, addr: Operand) -> kernel_dsl::ir::Reg {
        match addr {
            Operand::Addr {
                base: AddrBase::Reg(r),
                offset: 0,
            } => r,
            Operand::Addr { base, offset } => {
                let r = self.b.reg(ScalarType::U32);
                match base {
                    AddrBase::Symbol(s) => self.inst(
                        Op::Mov {
                            ty: ScalarType::U32,
                        },
                        vec![r.into()],
                        vec![Operand::Symbol(s)],
                    ),
                    AddrBase::Reg(b) => self.inst(
                        Op::Mov {
                            ty: ScalarType::U32,
                        },
                        vec![r.into()],
                        vec![b.into()],
                    ),
                }
                let d = self.b.reg(ScalarType::U32);
                self.add_imm(d, r, offset);
                d
            }
            _ => self.b.reg(ScalarType::U32),
        }
    }

    /// A global slice argument; elsewhere an error that starts with `what`, as in "`what` a
    /// global slice, found …".
    fn global_slice_arg(&mut self, e: &Expr, what: &str) -> DResult<SliceRef> {
        match self.expr(e, None)? {
            Value::Slice(s) => Ok(s),
            other => err(
                crate::diag::range(&e),
                format!("{what} a global slice, found {}", other.describe()),
            ),
        }
    }

    fn shared_arg(&mut self, e: &Expr) -> DResult<SharedRef> {
        match self.expr(e, None)? {
            Value::Shared(s) => Ok(s),
            other => err(
                crate::diag::range(&e),
                format!("expected a shared array, found {}", other.describe()),
            ),
        }
    }

    /// `shared_array::<T, N>()`, or `dynamic_shared::<T>()` / `dynamic_shared::<T, N>()` (a
    /// kernel that indexes at least `N` elements: launches giving fewer bytes are refused).
    fn shared_decl(
        &mut self,
        c: &ExprCall,
        seg: &syn::PathSegment,
        dynamic: bool,
    ) -> DResult<Value> {
        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
            let want = if dynamic {
                "dynamic_shared::<f32>()"
            } else {
                "shared_array::<f32, 256>()"
            };
            return err(
                crate::diag::range(&c),
                format!("name the element type (and length) of shared memory: `{want}`"),
            );
        };
        let args: Vec<_> = ab.args.iter().collect();
        let fits = if dynamic {
            matches!(args.len(), 1 | 2)
        } else {
            args.len() == 2
        };
        if !fits {
            return err(
                crate::diag::range(&ab),
                if dynamic {
                    "`dynamic_shared` takes a type and, optionally, the fewest elements the kernel indexes: `dynamic_shared::<f32>()` or `dynamic_shared::<f32, 256>()`"
                } else {
                    "`shared_array` takes a type and a length: `shared_array::<f32, 256>()`"
                },
            );
        }
        let syn::GenericArgument::Type(t) = args[0] else {
            return err(
                crate::diag::range(&args[0]),
                "the first argument is the element type",
            );
        };
        let elem = scalar_of(t, &self.spec.types)?;
        if dynamic {
            let min_len = match args.get(1) {
                Some(n) => {
                    let len = self.const_generic_arg(n)?;
                    if len <= 0 || len > (1 << 20) {
                        return err(
                            crate::diag::range(n),
                            format!("dynamic shared memory of at least {len} elements is not possible: give a count from 1 to 1048576"),
                        );
                    }
                    len as u32
                }
                None => 1,
            };
            let symbol = self.b.raw_dynamic_shared("dyn_smem");
            self.b.dynamic_shared_at_least(min_len * elem.bytes());
            return Ok(Value::Shared(SharedRef {
                symbol,
                elem,
                len: None,
            }));
        }
        let len = self.const_generic_arg(args[1])?;
        if len <= 0 || len > (1 << 20) {
            return err(
                crate::diag::range(&args[1]),
                format!("a shared array of {len} elements is not possible"),
            );
        }
        let hint = match self.current_let_name() {
            Some(n) => n,
            None => "smem".into(),
        };
        let symbol = self.fresh_shared_name(&hint);
        let symbol = self.b.raw_shared(symbol, elem, len as u32);
        Ok(Value::Shared(SharedRef {
            symbol,
            elem,
            len: Some(len as u32),
        }))
    }

    fn current_let_name(&self) -> Option<String> {
        self.let_name.clone()
    }

    pub(crate) fn fma(&mut self, a: Scalar, b: &Expr, c: &Expr) -> DResult<Value> {
        if !is_float(a.ty) {
            return err(
                self.span,
                format!("`fma` works on floats, not `{}`", rust_name(a.ty)),
            );
        }
        let bv = self.expr_as(b, a.ty)?;
        let cv = self.expr_as(c, a.ty)?;
        let (x, y, z) = (self.materialize(&a), self.src(&bv), self.src(&cv));
        let d = self.b.reg(a.ty);
        self.inst(
            Op::Fma {
                ty: a.ty,
                rnd: kernel_dsl::op::Rounding::Rn,
                ftz: false,
                sat: false,
            },
            vec![d.into()],
            vec![x.into(), y, z],
        );
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    pub(crate) fn min_max(&mut self, is_min: bool, a: Scalar, b: &Expr) -> DResult<Value> {
        if !(is_int(a.ty) || is_float(a.ty)) {
            return err(
                self.span,
                format!("`min`/`max` work on numbers, not `{}`", rust_name(a.ty)),
            );
        }
        let bv = self.expr_as(b, a.ty)?;
        let (x, y) = (self.materialize(&a), self.src(&bv));
        let d = self.b.reg(a.ty);
        let op = if is_min {
            Op::Min {
                ty: a.ty,
                ftz: false,
                nan: false,
            }
        } else {
            Op::Max {
                ty: a.ty,
                ftz: false,
                nan: false,
            }
        };
        self.inst(op, vec![d.into()], vec![x.into(), y]);
        Ok(Value::Scalar(Scalar::reg(d)))
    }

    /// Inlines a `#[device]` function: arguments bind its parameters in a fresh scope, and
    /// its tail expression is the call's value.
    fn inline_device(
        &mut self,
        f: &syn::ItemFn,
        c: &ExprCall,
        _expected: Option<ScalarType>,
    ) -> DResult<Value> {
        let name = f.sig.ident.to_string();
        if f.sig.inputs.len() != c.args.len() {
            return err(
                crate::diag::range(&c),
                format!(
                    "`{name}` takes {} argument(s), but {} were supplied",
                    f.sig.inputs.len(),
                    c.args.len()
                ),
            );
        }
        let mut bound = Vec::new();
        for (input, arg) in f.sig.inputs.iter().zip(&c.args) {
            let syn::FnArg::Typed(pt) = input else {
                return err(
                    crate::diag::range(&input),
                    "device functions take no `self`",
                );
            };
            let syn::Pat::Ident(pi) = &*pt.pat else {
                return err(
                    crate::diag::range(&pt.pat),
                    "device function parameters must be plain names",
                );
            };
            let value = match &*pt.ty {
                syn::Type::Reference(_) => {
                    let v = self.expr(arg, None)?;
                    match (&v, crate::dsl_type::param_type(&pt.ty, &self.spec.types)?) {
                        (Value::Slice(s), crate::dsl_type::ParamTy::Slice { elem, mutable })
                            if s.elem == elem && (s.mutable || !mutable) =>
                        {
                            let mut s = s.clone();
                            s.mutable = mutable;
                            Value::Slice(s)
                        }
                        // A shared array passes as itself: the helper indexes it, takes its
                        // vectors and hands it to `ldmatrix` or `cp_async` as the caller would.
                        (Value::Shared(a), crate::dsl_type::ParamTy::Slice { elem, .. })
                            if a.elem == elem =>
                        {
                            v.clone()
                        }
                        (
                            Value::TensorMap { elem, rank, .. },
                            crate::dsl_type::ParamTy::TensorMap { elem: e, rank: r },
                        ) if *elem == e && *rank == r => v.clone(),
                        _ => {
                            return err(
                                crate::diag::range(&arg),
                                format!(
                                    "`{name}` expects `{}` here, found {}",
                                    quote::ToTokens::to_token_stream(&pt.ty),
                                    v.describe()
                                ),
                            )
                        }
                    }
                }
                syn::Type::Array(_) => self.expr(arg, None)?,
                syn::Type::Tuple(_) => {
                    let v = self.expr(arg, None)?;
                    self.conform(v, &pt.ty, crate::diag::range(&arg))?
                }
                ty => {
                    let want = scalar_of(ty, &self.spec.types)?;
                    Value::Scalar(self.expr_as(arg, want)?)
                }
            };
            bound.push((pi.ident.to_string(), value, pi.mutability.is_some()));
        }
        self.enter_device(&name, crate::diag::range(&c))?;
        let out = self.isolated(|l| {
            for (n, v, mutable) in bound {
                let v = match (v, mutable) {
                    (Value::Scalar(s), true) => {
                        let r = l.b.reg(s.ty);
                        l.mov(r, s);
                        Value::Scalar(Scalar::reg(r))
                    }
                    // Arrays pass by value: a helper that mutates its copy leaves the
                    // caller's registers alone.
                    (Value::Array { elems, elem }, _) => l.copied_array(&elems, elem),
                    (v, _) => v,
                };
                l.bind(
                    &n,
                    Binding {
                        value: v,
                        mutable,
                        flex: None,
                    },
                );
            }
            l.returns.push(None);
            let want = match &f.sig.output {
                syn::ReturnType::Default => None,
                syn::ReturnType::Type(_, t) if matches!(&**t, syn::Type::Array(_)) => {
                    // An array result is returned as the registers of the tail array.
                    let v = l.block_value(&f.block, None);
                    l.returns.pop();
                    return match v? {
                        a @ Value::Array { .. } => Ok(a),
                        other => err(
                            crate::diag::range(&f.block),
                            format!(
                                "`{name}` must end with an array, found {}",
                                other.describe()
                            ),
                        ),
                    };
                }
                syn::ReturnType::Type(_, t) if matches!(&**t, syn::Type::Tuple(_)) => {
                    // A tuple result is returned as the registers of the tail tuple.
                    let v = l.block_value(&f.block, None);
                    l.returns.pop();
                    return l.conform(v?, t, crate::diag::range(&f.block));
                }
                syn::ReturnType::Type(_, t) => Some(scalar_of(t, &l.spec.types)?),
            };
            let v = l.block_value(&f.block, want);
            l.returns.pop();
            let v = v?;
            match want {
                Some(t) => Ok(Value::Scalar(l.as_scalar(
                    v,
                    Some(t),
                    crate::diag::range(&f.block),
                )?)),
                None => Ok(Value::Unit),
            }
        });
        self.leave_device();
        out
    }
}
