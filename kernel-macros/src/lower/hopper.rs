//! The Hopper intrinsics: mbarriers in shared memory, the bulk tensor copies to and from a
//! `&TensorMap<T, RANK>` parameter, `wgmma` descriptors and `wgmma.mma_async` on register
//! accumulators, register reallocation, warpgroup indices and `stmatrix`. What each needs from
//! the target is its instructions' catalog rows, checked as for every intrinsic.

use super::value::{Scalar, SharedRef, Value};
use super::Lowerer;
use crate::diag::{err, range, DResult};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{Imm, Operand, Reg, SpecialReg};
use kernel_dsl::op::{MatrixCount, MbarrierOp, Op, WgmmaInput};
use kernel_dsl::ScalarType;
use syn::{Expr, ExprCall};

/// The names lowered here.
pub const HOPPER: &[&str] = &[
    "mbarrier_init",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_try_wait_parity",
    "tma_load",
    "tma_store",
    "tma_store_commit",
    "tma_store_wait",
    "tma_store_wait_read",
    "wgmma_desc",
    "align_index",
    "wgmma_fence",
    "wgmma_commit_group",
    "wgmma_wait_group",
    "wgmma_bf16",
    "wgmma_f16",
    "wgmma_bf16_regs",
    "wgmma_f16_regs",
    "wgmma_tf32",
    "wgmma_tf32_regs",
    "wgmma_e4m3_e4m3",
    "wgmma_e4m3_e5m2",
    "wgmma_e5m2_e4m3",
    "wgmma_e5m2_e5m2",
    "wgmma_e4m3_e4m3_regs",
    "wgmma_e4m3_e5m2_regs",
    "wgmma_e5m2_e4m3_regs",
    "wgmma_e5m2_e5m2_regs",
    "setmaxnreg_inc",
    "setmaxnreg_dec",
    "warpgroup_idx",
    "stmatrix_x4",
];

fn imm(v: i64) -> Operand {
    Operand::Imm(Imm::Int(v))
}

impl Lowerer<'_> {
    pub(crate) fn hopper_call(&mut self, name: &str, c: &ExprCall) -> DResult<Value> {
        let args: Vec<&Expr> = c.args.iter().collect();
        let span = range(&c);
        match name {
            "mbarrier_init" | "mbarrier_arrive" | "mbarrier_arrive_expect_tx" => {
                let bar = self.mbarrier_at(args[0], args[1])?;
                let (op, extra) = match name {
                    "mbarrier_init" => (MbarrierOp::Init, Some(args[2])),
                    "mbarrier_arrive" => (MbarrierOp::Arrive, None),
                    _ => (MbarrierOp::ArriveExpectTx, Some(args[2])),
                };
                let mut srcs = vec![bar];
                if let Some(e) = extra {
                    let v = self.expr_as(e, ScalarType::U32)?;
                    srcs.push(self.src(&v));
                }
                // `init` writes no state; the arrivals return one this language has no use
                // for, so it goes to the sink.
                let dsts = if op == MbarrierOp::Init {
                    vec![]
                } else {
                    vec![Operand::Sink]
                };
                self.span = span;
                self.inst(Op::Mbarrier { op }, dsts, srcs);
                Ok(Value::Unit)
            }
            "mbarrier_try_wait_parity" => {
                let bar = self.mbarrier_at(args[0], args[1])?;
                let parity = self.expr_as(args[2], ScalarType::U32)?;
                let parity = self.src(&parity);
                let done = self.b.reg(ScalarType::Pred);
                self.span = span;
                self.inst(
                    Op::Mbarrier {
                        op: MbarrierOp::TryWaitParity,
                    },
                    vec![done.into()],
                    vec![bar, parity],
                );
                Ok(Value::Scalar(Scalar::reg(done)))
            }
            "tma_load" => self.tma_copy(&args, None, span),
            "tma_store" => self.tma_store(&args, span),
            "tma_store_commit" => {
                self.span = span;
                self.inst(Op::CpAsyncBulkCommit, vec![], vec![]);
                Ok(Value::Unit)
            }
            "tma_store_wait" | "tma_store_wait_read" => {
                let n = self.const_eval(args[0])?;
                if !(0..=u32::MAX as i64).contains(&n) {
                    return err(
                        range(&args[0]),
                        format!("`{name}` takes a count of pending groups, not {n}"),
                    );
                }
                self.span = span;
                let read = name == "tma_store_wait_read";
                self.inst(Op::CpAsyncBulkWait { read }, vec![], vec![imm(n)]);
                Ok(Value::Unit)
            }
            "wgmma_desc" => self.wgmma_desc(&args, span),
            "align_index" => {
                let tile = self.shared_of(args[0])?;
                let align = self.const_eval(args[1])?;
                let bytes = tile.elem.bytes() as i64;
                if align < bytes || align > 1024 || align & (align - 1) != 0 {
                    return err(range(&args[1]), format!("`align_index` aligns to a power of two from the element size ({bytes} bytes) to 1024 bytes, not {align}"));
                }
                let zero = Scalar {
                    op: imm(0),
                    ty: ScalarType::U32,
                };
                let base = self.shared_address(&tile, &zero, span)?;
                let base = self.addr_reg(base);
                // (align - base % align) % align bytes, counted in elements.
                let neg = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Neg {
                        ty: ScalarType::S32,
                        ftz: false,
                    },
                    vec![neg.into()],
                    vec![base.into()],
                );
                let pad = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::And {
                        ty: ScalarType::B32,
                    },
                    vec![pad.into()],
                    vec![neg.into(), imm(align - 1)],
                );
                let idx = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Shr {
                        ty: ScalarType::U32,
                    },
                    vec![idx.into()],
                    vec![pad.into(), imm(bytes.trailing_zeros() as i64)],
                );
                Ok(Value::Scalar(Scalar::reg(idx)))
            }
            "wgmma_fence" | "wgmma_commit_group" => {
                let op = if name == "wgmma_fence" {
                    Op::WgmmaFence
                } else {
                    Op::WgmmaCommit
                };
                self.span = span;
                self.inst(op, vec![], vec![]);
                Ok(Value::Unit)
            }
            "wgmma_wait_group" => {
                let n = self.const_eval(args[0])?;
                if !(0..=7).contains(&n) {
                    return err(
                        range(&args[0]),
                        format!("`wgmma_wait_group` leaves 0 to 7 groups in flight, not {n}"),
                    );
                }
                self.span = span;
                self.inst(Op::WgmmaWait, vec![], vec![imm(n)]);
                Ok(Value::Unit)
            }
            _ if name.starts_with("wgmma_") && wgmma_inputs(name).is_some() => {
                let (a, b) = wgmma_inputs(name).expect("checked by the guard");
                self.wgmma(a, b, name.ends_with("_regs"), &args, span)
            }
            "setmaxnreg_inc" | "setmaxnreg_dec" => {
                let count = self.const_eval(args[0])?;
                if !(24..=256).contains(&count) || count % 8 != 0 {
                    return err(range(&args[0]), format!("`{name}` takes a register count from 24 to 256 in steps of 8, not {count}"));
                }
                self.span = span;
                self.inst(
                    Op::Setmaxnreg {
                        increase: name == "setmaxnreg_inc",
                        count: count as u32,
                    },
                    vec![],
                    vec![imm(count)],
                );
                Ok(Value::Unit)
            }
            "warpgroup_idx" => {
                let tid = self.special(SpecialReg::Tid(kernel_dsl::ir::Dim::X));
                let tid = self.materialize(&tid);
                let wg = self.b.reg(ScalarType::U32);
                self.inst(
                    Op::Shr {
                        ty: ScalarType::U32,
                    },
                    vec![wg.into()],
                    vec![tid.into(), imm(7)],
                );
                Ok(Value::Scalar(Scalar::reg(wg)))
            }
            "stmatrix_x4" => {
                let tile = self.shared_of(args[0])?;
                if tile.elem.bytes() != 2 && tile.elem.bytes() != 4 {
                    return err(range(&args[0]), "`stmatrix_x4` stores 16-bit matrices: give a shared array of `u32` words or of a 16-bit type");
                }
                let idx = self.index_scalar(args[1])?;
                let at = self.shared_address(&tile, &idx, range(&args[1]))?;
                let v = match self.expr(args[2], Some(ScalarType::U32))? {
                    Value::Array { elems, elem } if elem == ScalarType::U32 && elems.len() == 4 => {
                        elems
                    }
                    other => {
                        return err(
                            range(&args[2]),
                            format!("expected `[u32; 4]`, found {}", other.describe()),
                        )
                    }
                };
                self.span = span;
                self.inst(
                    Op::Stmatrix {
                        count: MatrixCount::X4,
                        trans: false,
                    },
                    vec![],
                    vec![at, vector(&v)],
                );
                Ok(Value::Unit)
            }
            other => err(span, format!("`{other}` is not implemented")),
        }
    }

    fn shared_of(&mut self, e: &Expr) -> DResult<SharedRef> {
        match self.expr(e, None)? {
            Value::Shared(s) => Ok(s),
            other => err(
                range(&e),
                format!("expected a shared array, found {}", other.describe()),
            ),
        }
    }

    /// The address of the mbarrier `bars[index]`, `bars` a shared array of `u64`.
    fn mbarrier_at(&mut self, bars: &Expr, index: &Expr) -> DResult<Operand> {
        let a = self.shared_of(bars)?;
        if a.elem != ScalarType::U64 {
            return err(
                range(&bars),
                format!(
                    "an mbarrier is a `u64` in shared memory: give a `shared_array::<u64, N>()`, not an array of `{}`",
                    rust_name(a.elem)
                ),
            );
        }
        let idx = self.index_scalar(index)?;
        self.shared_address(&a, &idx, range(&index))
    }

    /// An address operand in a register of its own (32-bit shared address).
    pub(super) fn addr_reg(&mut self, addr: Operand) -> Reg {
        let r = self.b.reg(ScalarType::U32);
        match addr {
            Operand::Addr {
                base: kernel_dsl::ir::AddrBase::Symbol(s),
                offset,
            } => {
                self.inst(
                    Op::Mov {
                        ty: ScalarType::U32,
                    },
                    vec![r.into()],
                    vec![Operand::Symbol(s)],
                );
                if offset == 0 {
                    return r;
                }
                let d = self.b.reg(ScalarType::U32);
                self.add_imm(d, r, offset);
                d
            }
            Operand::Addr {
                base: kernel_dsl::ir::AddrBase::Reg(b),
                offset,
            } => {
                if offset == 0 {
                    return b;
                }
                self.add_imm(r, b, offset);
                r
            }
            _ => r,
        }
    }

    /// `d = a + k` in u32.
    pub(super) fn add_imm(&mut self, d: Reg, a: Reg, k: i64) {
        self.inst(
            Op::Add {
                ty: ScalarType::U32,
                rnd: None,
                ftz: false,
                sat: false,
            },
            vec![d.into()],
            vec![a.into(), imm(k)],
        );
    }

    /// `tma_load`, or with `multicast` (the 16-bit CTA mask) `tma_load_multicast`: the same
    /// operands and checks, the mask last.
    pub(super) fn tma_copy(
        &mut self,
        args: &[&Expr],
        multicast: Option<Reg>,
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let name = if multicast.is_some() {
            "tma_load_multicast"
        } else {
            "tma_load"
        };
        let dst = self.shared_of(args[0])?;
        let di = self.index_scalar(args[1])?;
        let at = self.shared_address(&dst, &di, range(&args[1]))?;
        let (map, coords) = self.tensor_box(name, args[2], args[3], &dst, args[0])?;
        let bar = self.mbarrier_at(args[4], args[5])?;
        self.span = span;
        let dims = coords.len() as u8;
        let mut srcs = vec![at, Operand::TensorCoords { map, coords }, bar];
        let op = match multicast {
            Some(mask) => {
                srcs.push(mask.into());
                Op::CpAsyncBulkTensorMulticast { dims }
            }
            None => Op::CpAsyncBulkTensor { dims },
        };
        self.inst(op, vec![], srcs);
        Ok(Value::Unit)
    }

    fn tma_store(&mut self, args: &[&Expr], span: crate::diag::SpanRange) -> DResult<Value> {
        let src = self.shared_of(args[2])?;
        let si = self.index_scalar(args[3])?;
        let at = self.shared_address(&src, &si, range(&args[3]))?;
        let (map, coords) = self.tensor_box("tma_store", args[0], args[1], &src, args[2])?;
        self.span = span;
        self.inst(
            Op::CpAsyncBulkTensorStore {
                dims: coords.len() as u8,
            },
            vec![],
            vec![Operand::TensorCoords { map, coords }, at],
        );
        Ok(Value::Unit)
    }

    /// The tensor-map parameter `map` and the box coordinates `coords` of a tensor copy
    /// through the shared array `tile`: the map's element size must be the tile's, and there
    /// is one coordinate per dimension.
    fn tensor_box(
        &mut self,
        what: &str,
        map: &Expr,
        coords: &Expr,
        tile: &SharedRef,
        tile_expr: &Expr,
    ) -> DResult<(Reg, Vec<Operand>)> {
        let (map_reg, elem, rank) = match self.expr(map, None)? {
            Value::TensorMap { addr, elem, rank } => (addr, elem, rank),
            other => {
                return err(
                    range(&map),
                    format!(
                        "`{what}` takes a `&TensorMap<T, RANK>` parameter, found {}",
                        other.describe()
                    ),
                )
            }
        };
        if elem.bytes() != tile.elem.bytes() {
            return err(
                range(&tile_expr),
                format!(
                    "the tensor map holds `{}` but the shared array `{}`: copy through an array of the map's element type",
                    rust_name(elem),
                    rust_name(tile.elem)
                ),
            );
        }
        let coords_expr = coords;
        let coords = match self.expr(coords_expr, Some(ScalarType::U32))? {
            Value::Array {
                elems,
                elem: ScalarType::U32 | ScalarType::S32,
            } => elems,
            other => {
                return err(
                    range(&coords_expr),
                    format!(
                        "the coordinates are a `[u32; {rank}]`, innermost first; found {}",
                        other.describe()
                    ),
                )
            }
        };
        if coords.len() != rank as usize {
            return err(
                range(&coords_expr),
                format!(
                    "the tensor map has {rank} dimension{}, so the box is named by {rank} coordinate{}, not {}",
                    if rank == 1 { "" } else { "s" },
                    if rank == 1 { "" } else { "s" },
                    coords.len()
                ),
            );
        }
        Ok((map_reg, coords.iter().map(|r| Operand::Reg(*r)).collect()))
    }

    fn wgmma_desc(&mut self, args: &[&Expr], span: crate::diag::SpanRange) -> DResult<Value> {
        let tile = self.shared_of(args[0])?;
        let idx = self.index_scalar(args[1])?;
        let at = self.shared_address(&tile, &idx, range(&args[1]))?;
        let leading = self.const_eval(args[2])?;
        let stride = self.const_eval(args[3])?;
        let swizzle = self.const_eval(args[4])?;
        for (e, v, what) in [(args[2], leading, "leading"), (args[3], stride, "stride")] {
            if v < 0 || v % 16 != 0 || v >= 1 << 18 {
                return err(
                    range(&e),
                    format!("the {what} byte offset is a multiple of 16 below 2^18, not {v}"),
                );
            }
        }
        let mode: u64 = match swizzle {
            0 => 0,
            128 => 1,
            64 => 2,
            32 => 3,
            other => {
                return err(
                    range(&args[4]),
                    format!("the swizzle span is 0, 32, 64 or 128 bytes, not {other}"),
                )
            }
        };
        let addr = self.addr_reg(at);
        self.span = span;
        let wide = self.b.reg(ScalarType::U64);
        self.inst(
            Op::Cvt {
                dst: ScalarType::U64,
                src: ScalarType::U32,
                rnd: None,
                ftz: false,
                sat: false,
                relu: false,
            },
            vec![wide.into()],
            vec![addr.into()],
        );
        let units = self.b.reg(ScalarType::U64);
        self.inst(
            Op::Shr {
                ty: ScalarType::U64,
            },
            vec![units.into()],
            vec![wide.into(), imm(4)],
        );
        let start = self.b.reg(ScalarType::U64);
        self.inst(
            Op::And {
                ty: ScalarType::B64,
            },
            vec![start.into()],
            vec![units.into(), imm(0x3FFF)],
        );
        let fixed = (mode << 62) | (((stride as u64) >> 4) << 32) | (((leading as u64) >> 4) << 16);
        let desc = self.b.reg(ScalarType::U64);
        self.inst(
            Op::Or {
                ty: ScalarType::B64,
            },
            vec![desc.into()],
            vec![start.into(), imm(fixed as i64)],
        );
        Ok(Value::Scalar(Scalar::reg(desc)))
    }

    /// `wgmma.mma_async` into the registers of the accumulator `&mut acc` itself, so that a
    /// loop carries them with no copies. With `regs_a`, A is a `[u32; 4]` in registers (the
    /// `mma.sync` A fragment of each warp's 16 rows for the same K) and only B has a
    /// descriptor. Only 16-bit operands take the MN-major flags.
    fn wgmma(
        &mut self,
        a_ty: WgmmaInput,
        b_ty: WgmmaInput,
        regs_a: bool,
        args: &[&Expr],
        span: crate::diag::SpanRange,
    ) -> DResult<Value> {
        let usage = "the accumulator is a mutable `[f32; N / 2]` passed as `&mut acc`";
        let Expr::Reference(r) = args[0] else {
            return err(range(&args[0]), usage);
        };
        let Expr::Path(p) = &*r.expr else {
            return err(range(&args[0]), usage);
        };
        let name = p
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        let acc = match self.lookup(&name) {
            Some(b) if b.mutable && r.mutability.is_some() => match &b.value {
                Value::Array { elems, elem } if *elem == ScalarType::F32 => elems.clone(),
                other => {
                    return err(
                        range(&args[0]),
                        format!("{usage}, found {}", other.describe()),
                    )
                }
            },
            _ => return err(range(&args[0]), usage),
        };
        let n = acc.len() * 2;
        if n == 0 || n % 8 != 0 || n > 256 {
            return err(range(&args[0]), format!("a wgmma accumulator holds N / 2 floats for N a multiple of 8 up to 256, not {}", acc.len()));
        }
        let flag = |l: &mut Self, e: &Expr| -> DResult<i64> {
            match l.const_eval(e)? {
                v @ (0 | 1) => Ok(v),
                v => err(range(&e), format!("expected `true` or `false`, found {v}")),
            }
        };
        let a = if regs_a {
            match self.expr(args[1], Some(ScalarType::U32))? {
                Value::Array { elems, elem } if elem == ScalarType::U32 && elems.len() == 4 => {
                    vector(&elems)
                }
                other => {
                    return err(
                        range(&args[1]),
                        format!(
                            "A in registers is a `[u32; 4]` ({} a word), found {}",
                            match a_ty.bytes() {
                                1 => "four fp8 values",
                                2 => "two 16-bit values",
                                _ => "one tf32 value",
                            },
                            other.describe()
                        ),
                    )
                }
            }
        } else {
            let a = self.expr_as(args[1], ScalarType::U64)?;
            self.materialize(&a).into()
        };
        let b = self.expr_as(args[2], ScalarType::U64)?;
        let scale = self.expr_as(args[3], ScalarType::Pred)?;
        // Register A has no layout flag: only B's is written; tf32 and fp8 have none.
        let trans = match (a_ty.transposable(), regs_a) {
            (false, _) => vec![],
            (true, true) => vec![flag(self, args[4])?],
            (true, false) => vec![flag(self, args[4])?, flag(self, args[5])?],
        };
        let (b, scale) = (self.materialize(&b), self.materialize(&scale));
        self.span = span;
        let mut srcs = vec![a, b.into(), scale.into(), imm(1), imm(1)];
        srcs.extend(trans.into_iter().map(imm));
        self.inst(
            Op::Wgmma {
                n: n as u32,
                a: a_ty,
                b: b_ty,
            },
            vec![vector(&acc)],
            srcs,
        );
        Ok(Value::Unit)
    }
}

/// The input types a `wgmma_*` intrinsic's name spells: `wgmma_bf16`, `wgmma_tf32_regs`,
/// `wgmma_e4m3_e5m2` (A's type, then B's where they may differ).
fn wgmma_inputs(name: &str) -> Option<(WgmmaInput, WgmmaInput)> {
    let types = name.strip_prefix("wgmma_")?;
    let types = types.strip_suffix("_regs").unwrap_or(types);
    let input = |t: &str| match t {
        "f16" => Some(WgmmaInput::F16),
        "bf16" => Some(WgmmaInput::Bf16),
        "tf32" => Some(WgmmaInput::Tf32),
        "e4m3" => Some(WgmmaInput::E4m3),
        "e5m2" => Some(WgmmaInput::E5m2),
        _ => None,
    };
    let pair = match types.split_once('_') {
        Some((a, b)) => (input(a)?, input(b)?),
        None => (input(types)?, input(types)?),
    };
    (pair.0.pairs_with(pair.1) && (pair.0.bytes() == 1) == types.contains('_')).then_some(pair)
}

fn vector(regs: &[Reg]) -> Operand {
    Operand::Vector(regs.iter().map(|r| Operand::Reg(*r)).collect())
}
