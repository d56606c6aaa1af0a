//! The free-function intrinsics of the `#[kernel]` language, written once as data: their
//! names, signatures, documentation and the instructions they lower to. `kernel-macros` lowers
//! every [`Lowering::Chain`] row generically and reports unknown functions against this
//! table; `ptxkit`'s prelude holds one host stub per row (a test there checks the signatures).
//! What an intrinsic needs from the target is not written here: it follows from its
//! instructions' rows in [`crate::catalog`].

use crate::catalog::{requirement, Requirement};
use crate::op::{
    ApproxFn, BarRedOp, CacheOp, CvtRounding, Fp8, GridDepControl, MatrixCount, MbarrierOp,
    MmaShape, Op, ReduxOp, Rounding, Scope, ShflMode, VoteMode, WgmmaInput,
};
use crate::types::ScalarType;

/// A value an intrinsic takes or returns, as its prelude stub spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// No value (`()`).
    Unit,
    Scalar(ScalarType),
    /// A register array `[T; N]`.
    Array(ScalarType, usize),
    /// A type parameter `T`; the lowering checks which types it admits.
    Generic,
    /// A `Dim3` coordinate (`.x/.y/.z`).
    Dim3,
    /// A buffer or shared array, `&[T]` or `&mut [T]`.
    Slice {
        mutable: bool,
    },
    /// A `u32` that must be a compile-time constant.
    ConstU32,
    /// A `bool` that must be a compile-time constant.
    ConstBool,
    /// A `&TensorMap<T, RANK>` kernel parameter.
    TensorMap,
    /// A shared array of `u64` mbarriers, `&mut [u64]`.
    Mbarriers,
    /// A shared array declared by the call (`shared_array::<T, N>()`).
    Shared,
}

/// One parameter of an intrinsic.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
}

/// How a call becomes instructions.
#[derive(Clone, Copy, Debug)]
pub enum Lowering {
    /// Scalar in, scalar out, lowered generically: the first instruction takes every argument,
    /// each later one the previous result; each writes a register of the result type (none
    /// for a `()` result).
    Chain(&'static [Op]),
    /// Lowered by hand in `kernel-macros` (operands that are not scalars, immediates, type
    /// arguments or several result types); the instructions it emits are listed so that the
    /// catalog covers them.
    Special(&'static [Op]),
}

/// One language intrinsic.
#[derive(Clone, Copy, Debug)]
pub struct Intrinsic {
    pub name: &'static str,
    pub params: &'static [Param],
    pub result: Ty,
    /// One line for documentation.
    pub doc: &'static str,
    pub lowering: Lowering,
    /// Also callable as a method of its first argument (`x.sqrt()` as well as `sqrt(x)`).
    pub method: bool,
}

impl Intrinsic {
    /// The instructions a call emits.
    pub fn ops(&self) -> &'static [Op] {
        match self.lowering {
            Lowering::Chain(ops) | Lowering::Special(ops) => ops,
        }
    }

    /// The most demanding of its instructions' catalog requirements (by minimum SM, then
    /// PTX ISA); `None` for an intrinsic that emits no instruction.
    pub fn requirement(&self) -> Option<Requirement> {
        self.ops()
            .iter()
            .map(requirement)
            .max_by_key(|r| (r.min_sm, r.min_isa))
    }
}

/// The intrinsic called `name`: its first row, the one a free-function call and the prelude
/// stub follow.
pub fn find(name: &str) -> Option<&'static Intrinsic> {
    INTRINSICS.iter().find(|i| i.name == name)
}

/// The row of `name` whose first parameter is `ty`, else its first row. A name has one row per
/// receiver type where Rust has one method per type (`f32::sqrt`, `f64::sqrt`); the later rows
/// are reached as methods (`x.sqrt()` on an `f64`).
pub fn find_for(name: &str, ty: ScalarType) -> Option<&'static Intrinsic> {
    INTRINSICS
        .iter()
        .find(|i| i.name == name && matches!(i.params.first(), Some(p) if p.ty == Ty::Scalar(ty)))
        .or_else(|| find(name))
}

const F32: ScalarType = ScalarType::F32;
const U32: ScalarType = ScalarType::U32;

const fn p(name: &'static str, ty: Ty) -> Param {
    Param { name, ty }
}

const X_F32: &[Param] = &[p("x", Ty::Scalar(F32))];
const X_F64: &[Param] = &[p("x", Ty::Scalar(ScalarType::F64))];
const X_U32: &[Param] = &[p("x", Ty::Scalar(U32))];
const DP4A_S32: &[Param] = &[
    p("a", Ty::Scalar(U32)),
    p("b", Ty::Scalar(U32)),
    p("c", Ty::Scalar(ScalarType::S32)),
];
const THREE_U32: &[Param] = &[
    p("a", Ty::Scalar(U32)),
    p("b", Ty::Scalar(U32)),
    p("c", Ty::Scalar(U32)),
];
const AB_F32: &[Param] = &[p("a", Ty::Scalar(F32)), p("b", Ty::Scalar(F32))];
const SHFL: &[Param] = &[p("v", Ty::Generic), p("lane", Ty::Scalar(U32))];
const PRED: &[Param] = &[p("p", Ty::Scalar(ScalarType::Pred))];
const GENERIC1: &[Param] = &[p("v", Ty::Generic)];
const GENERIC2: &[Param] = &[p("a", Ty::Generic), p("b", Ty::Generic)];
const LDMATRIX: &[Param] = &[
    p("tile", Ty::Slice { mutable: false }),
    p("index", Ty::Scalar(U32)),
];
const MMA: &[Param] = &[
    p("a", Ty::Array(U32, 4)),
    p("b", Ty::Array(U32, 2)),
    p("acc", Ty::Array(F32, 4)),
];
const MMA_INT8: &[Param] = &[
    p("a", Ty::Array(U32, 4)),
    p("b", Ty::Array(U32, 2)),
    p("acc", Ty::Array(ScalarType::S32, 4)),
];

const BARRIER: &[Param] = &[p("bars", Ty::Mbarriers), p("index", Ty::Scalar(U32))];
const WGMMA: &[Param] = &[
    p("acc", Ty::Generic),
    p("a", Ty::Scalar(ScalarType::U64)),
    p("b", Ty::Scalar(ScalarType::U64)),
    p("accumulate", Ty::Scalar(ScalarType::Pred)),
    p("a_mn_major", Ty::ConstBool),
    p("b_mn_major", Ty::ConstBool),
];
const WGMMA_REGS: &[Param] = &[
    p("acc", Ty::Generic),
    p("a", Ty::Array(U32, 4)),
    p("b", Ty::Scalar(ScalarType::U64)),
    p("accumulate", Ty::Scalar(ScalarType::Pred)),
    p("b_mn_major", Ty::ConstBool),
];
const fn mbarrier(op: MbarrierOp) -> Op {
    Op::Mbarrier { op }
}
const WGMMA_K_MAJOR: &[Param] = &[
    p("acc", Ty::Generic),
    p("a", Ty::Scalar(ScalarType::U64)),
    p("b", Ty::Scalar(ScalarType::U64)),
    p("accumulate", Ty::Scalar(ScalarType::Pred)),
];
const WGMMA_K_MAJOR_REGS: &[Param] = &[
    p("acc", Ty::Generic),
    p("a", Ty::Array(U32, 4)),
    p("b", Ty::Scalar(ScalarType::U64)),
    p("accumulate", Ty::Scalar(ScalarType::Pred)),
];
const fn wgmma_of(a: WgmmaInput, b: WgmmaInput) -> Op {
    Op::Wgmma { n: 64, a, b }
}

const fn approx(func: ApproxFn, ftz: bool) -> Op {
    Op::Approx { func, ty: F32, ftz }
}
const SQRT_RN: Op = Op::SqrtIeee {
    ty: F32,
    rnd: Rounding::Rn,
    ftz: false,
};
const SQRT_RN_F64: Op = Op::SqrtIeee {
    ty: ScalarType::F64,
    rnd: Rounding::Rn,
    ftz: false,
};
const RCP_RN: Op = Op::RcpIeee {
    ty: F32,
    rnd: Rounding::Rn,
    ftz: false,
};
const fn round_f32(rnd: CvtRounding) -> Op {
    Op::Cvt {
        dst: F32,
        src: F32,
        rnd: Some(rnd),
        ftz: false,
        sat: false,
        relu: false,
    }
}
const MUL_F32: Op = Op::Mul {
    ty: F32,
    mode: None,
    rnd: Some(Rounding::Rn),
    ftz: false,
    sat: false,
};
const MOV_U32: Op = Op::Mov { ty: U32 };
const fn mma(shape: MmaShape, ab: ScalarType) -> Op {
    Op::Mma {
        shape,
        d: F32,
        a: ab,
        b: ab,
        c: F32,
    }
}
/// `mma.sync.m16n8k32` on bytes (`a` read as `a_ty`, `b` as int8) into an `s32` accumulator.
const fn mma_int8(a_ty: ScalarType) -> Op {
    Op::Mma {
        shape: MmaShape::M16n8k32,
        d: ScalarType::S32,
        a: a_ty,
        b: ScalarType::S8,
        c: ScalarType::S32,
    }
}

/// A row lowered generically.
const fn chain(
    name: &'static str,
    params: &'static [Param],
    result: Ty,
    doc: &'static str,
    ops: &'static [Op],
    method: bool,
) -> Intrinsic {
    Intrinsic {
        name,
        params,
        result,
        doc,
        lowering: Lowering::Chain(ops),
        method,
    }
}

/// A row lowered by hand.
const fn special(
    name: &'static str,
    params: &'static [Param],
    result: Ty,
    doc: &'static str,
    ops: &'static [Op],
) -> Intrinsic {
    Intrinsic {
        name,
        params,
        result,
        doc,
        lowering: Lowering::Special(ops),
        method: false,
    }
}

/// Every free-function intrinsic. A new one-instruction scalar intrinsic is one `chain` row
/// here plus its prelude stub.
// One row a line reads as a table; rustfmt would spread each over a dozen.
#[rustfmt::skip]
pub const INTRINSICS: &[Intrinsic] = &[
    // Thread coordinates and barriers.
    special("thread_idx", &[], Ty::Dim3, "The thread's index in its block (`%tid`).", &[MOV_U32]),
    special("block_idx", &[], Ty::Dim3, "The block's index in the grid (`%ctaid`).", &[MOV_U32]),
    special("block_dim", &[], Ty::Dim3, "The block's shape (`%ntid`).", &[MOV_U32]),
    special("grid_dim", &[], Ty::Dim3, "The grid's shape in blocks (`%nctaid`).", &[MOV_U32]),
    special("lane_id", &[], Ty::Scalar(U32), "The thread's lane in its warp (`%laneid`).", &[MOV_U32]),
    special("sync_threads", &[], Ty::Unit, "Waits for every thread of the block (`bar.sync 0`).", &[Op::BarSync]),
    special("sync_warp", &[], Ty::Unit, "Waits for every lane of the warp, and makes what they wrote to shared memory before it (`cp.async` copies they waited for included) visible to all (`bar.warp.sync 0xffffffff`).", &[Op::BarWarpSync]),
    special("sync_threads_or", PRED, Ty::Scalar(ScalarType::Pred), "Waits for every thread of the block, as `sync_threads`, and returns whether `p` holds in any of them (`bar.red.or.pred`). Every thread gets the same result, so it may end a loop that holds barriers.", &[Op::BarRed { op: BarRedOp::Or }]),
    special("sync_threads_and", PRED, Ty::Scalar(ScalarType::Pred), "Waits for every thread of the block, as `sync_threads`, and returns whether `p` holds in all of them (`bar.red.and.pred`); the same result in every thread.", &[Op::BarRed { op: BarRedOp::And }]),
    special("sync_threads_count", PRED, Ty::Scalar(U32), "Waits for every thread of the block, as `sync_threads`, and returns how many of them hold `p` (`bar.red.popc.u32`); the same result in every thread.", &[Op::BarRed { op: BarRedOp::Popc }]),
    chain("fence_cta", &[], Ty::Unit, "Orders this thread's memory accesses as seen by its block (`fence.acq_rel.cta`).", &[Op::Fence { scope: Scope::Cta }], false),
    chain("fence_gpu", &[], Ty::Unit, "Orders this thread's memory accesses as seen by the whole GPU (`fence.acq_rel.gpu`).", &[Op::Fence { scope: Scope::Gpu }], false),
    chain("fence_sys", &[], Ty::Unit, "Orders this thread's memory accesses as seen by the GPU and the host (`fence.acq_rel.sys`).", &[Op::Fence { scope: Scope::Sys }], false),
    special("prefetch_l2", &[p("src", Ty::Slice { mutable: false }), p("index", Ty::Scalar(U32))], Ty::Unit, "Asks for the line of global memory holding `src[index]` in L2 and goes on: no register holds it and nothing waits for it, so a thread may ask for many lines it will load later (`prefetch.global.L2`); the emulator skips it.", &[Op::PrefetchL2]),
    chain("nanosleep", &[p("ns", Ty::Scalar(U32))], Ty::Unit, "Suspends the thread for about `ns` nanoseconds (at most 1 ms), a hint to the scheduler in a spin-wait on another block (`nanosleep.u32`, sm_70+); the emulator runs other blocks meanwhile.", &[Op::Nanosleep], false),
    // Warp collectives.
    special("shfl_down", SHFL, Ty::Generic, "The value of `v` in lane `lane_id() + delta` (`shfl.sync.down`); 32-bit types.", &[Op::Shfl { mode: ShflMode::Down }]),
    special("shfl_up", SHFL, Ty::Generic, "The value of `v` in lane `lane_id() - delta` (`shfl.sync.up`).", &[Op::Shfl { mode: ShflMode::Up }]),
    special("shfl_xor", SHFL, Ty::Generic, "The value of `v` in lane `lane_id() ^ mask` (`shfl.sync.bfly`).", &[Op::Shfl { mode: ShflMode::Bfly }]),
    special("shfl_idx", SHFL, Ty::Generic, "The value of `v` in lane `lane` (`shfl.sync.idx`).", &[Op::Shfl { mode: ShflMode::Idx }]),
    special("vote_all", PRED, Ty::Scalar(ScalarType::Pred), "Whether `p` holds in every lane of the warp.", &[Op::Vote { mode: VoteMode::All }]),
    special("vote_any", PRED, Ty::Scalar(ScalarType::Pred), "Whether `p` holds in some lane of the warp.", &[Op::Vote { mode: VoteMode::Any }]),
    special("ballot", PRED, Ty::Scalar(U32), "One bit per lane: which lanes hold `p`.", &[Op::Vote { mode: VoteMode::Ballot }]),
    special("warp_reduce_add", GENERIC1, Ty::Generic, "Sum over the warp (`redux.sync`; u32 or i32).", &[Op::Redux { op: ReduxOp::Add, ty: U32 }]),
    special("warp_reduce_min", GENERIC1, Ty::Generic, "Minimum over the warp (`redux.sync`).", &[Op::Redux { op: ReduxOp::Min, ty: U32 }]),
    special("warp_reduce_max", GENERIC1, Ty::Generic, "Maximum over the warp (`redux.sync`).", &[Op::Redux { op: ReduxOp::Max, ty: U32 }]),
    special("warp_reduce_and", GENERIC1, Ty::Generic, "Bitwise and over the warp (`redux.sync`).", &[Op::Redux { op: ReduxOp::And, ty: ScalarType::B32 }]),
    special("warp_reduce_or", GENERIC1, Ty::Generic, "Bitwise or over the warp (`redux.sync`).", &[Op::Redux { op: ReduxOp::Or, ty: ScalarType::B32 }]),
    special("warp_reduce_xor", GENERIC1, Ty::Generic, "Bitwise xor over the warp (`redux.sync`).", &[Op::Redux { op: ReduxOp::Xor, ty: ScalarType::B32 }]),
    // Arithmetic over several types.
    special("fma", &[p("a", Ty::Generic), p("b", Ty::Generic), p("c", Ty::Generic)], Ty::Generic, "`a * b + c` with one rounding (`fma.rn`).", &[Op::Fma { ty: F32, rnd: Rounding::Rn, ftz: false, sat: false }]),
    special("min", GENERIC2, Ty::Generic, "The smaller of two numbers.", &[Op::Min { ty: F32, ftz: false, nan: false }]),
    special("max", GENERIC2, Ty::Generic, "The larger of two numbers.", &[Op::Max { ty: F32, ftz: false, nan: false }]),
    special("abs", GENERIC1, Ty::Generic, "Absolute value of a float or signed integer.", &[Op::Abs { ty: F32, ftz: false }]),
    // f32 math. `exp` and `ln` scale by a constant, which a chain does not express.
    special("exp", X_F32, Ty::Scalar(F32), "`e^x` (`ex2.approx` of `x·log2 e`).", &[MUL_F32, approx(ApproxFn::Ex2, false)]),
    special("ln", X_F32, Ty::Scalar(F32), "Natural logarithm (`lg2.approx` scaled by ln 2).", &[approx(ApproxFn::Lg2, false), MUL_F32]),
    chain("exp2", X_F32, Ty::Scalar(F32), "`2^x` (`ex2.approx.f32`).", &[approx(ApproxFn::Ex2, false)], true),
    chain("ex2_approx_ftz", X_F32, Ty::Scalar(F32), "`2^x`, subnormal inputs and results flushed to zero (`ex2.approx.ftz.f32`).", &[approx(ApproxFn::Ex2, true)], true),
    chain("log2", X_F32, Ty::Scalar(F32), "Base-2 logarithm (`lg2.approx.f32`).", &[approx(ApproxFn::Lg2, false)], true),
    chain("sqrt", X_F32, Ty::Scalar(F32), "Square root, correctly rounded (`sqrt.rn.f32`).", &[SQRT_RN], true),
    chain("sqrt", X_F64, Ty::Scalar(ScalarType::F64), "Square root of an `f64`, correctly rounded (`sqrt.rn.f64`); a method only (`x.sqrt()`).", &[SQRT_RN_F64], true),
    chain("sqrt_rn", X_F32, Ty::Scalar(F32), "Square root, correctly rounded (`sqrt.rn.f32`); the same as `sqrt`, named for the rounding.", &[SQRT_RN], true),
    chain("div_full", AB_F32, Ty::Scalar(F32), "`a / b` within 2 ulp in a few instructions (`div.full.f32`), where `/` is the IEEE division's subroutine.", &[Op::Div { ty: F32, mode: crate::op::DivMode::Full, ftz: false }], false),
    chain("rcp_rn", X_F32, Ty::Scalar(F32), "`1 / x`, correctly rounded (`rcp.rn.f32`).", &[RCP_RN], true),
    chain("rsqrt", X_F32, Ty::Scalar(F32), "`1 / sqrt(x)`, fast and approximate (`rsqrt.approx.f32`; PTX ISA bounds its error, a few ulp).", &[approx(ApproxFn::Rsqrt, false)], true),
    chain("rsqrt_rn", X_F32, Ty::Scalar(F32), "`1 / sqrt(x)` as two correctly rounded steps (`sqrt.rn.f32`, then `rcp.rn.f32`).", &[SQRT_RN, RCP_RN], true),
    chain("sin", X_F32, Ty::Scalar(F32), "Sine (`sin.approx.f32`).", &[approx(ApproxFn::Sin, false)], true),
    chain("cos", X_F32, Ty::Scalar(F32), "Cosine (`cos.approx.f32`).", &[approx(ApproxFn::Cos, false)], true),
    chain("tanh", X_F32, Ty::Scalar(F32), "Hyperbolic tangent (`tanh.approx.f32`, sm_75+).", &[approx(ApproxFn::Tanh, false)], true),
    chain("floor", X_F32, Ty::Scalar(F32), "Rounds down (`cvt.rmi.f32.f32`).", &[round_f32(CvtRounding::Rmi)], true),
    chain("ceil", X_F32, Ty::Scalar(F32), "Rounds up (`cvt.rpi.f32.f32`).", &[round_f32(CvtRounding::Rpi)], true),
    chain("round_ties_even", X_F32, Ty::Scalar(F32), "Rounds to the nearest integer, ties to even (`cvt.rni.f32.f32`), as Rust's `f32::round_ties_even`.", &[round_f32(CvtRounding::Rni)], true),
    // Bits and conversions.
    chain("to_bits", X_F32, Ty::Scalar(U32), "The bits of `x` (`mov.b32`), as Rust's `f32::to_bits`.", &[Op::Mov { ty: ScalarType::B32 }], true),
    chain("from_bits", X_U32, Ty::Scalar(F32), "The f32 whose bits are `x` (`mov.b32`), as Rust's `f32::from_bits`.", &[Op::Mov { ty: ScalarType::B32 }], false),
    chain("brev", X_U32, Ty::Scalar(U32), "The bits of `x` in reverse order (`brev.b32`).", &[Op::Brev { ty: ScalarType::B32 }], false),
    chain("clz", X_U32, Ty::Scalar(U32), "The number of leading zero bits of `x`, 32 for 0 (`clz.b32`).", &[Op::Clz { ty: ScalarType::B32 }], false),
    chain("dp4a_s8", DP4A_S32, Ty::Scalar(ScalarType::S32), "`c` plus the dot product of the four bytes of `a` and of `b`, all read as int8 (`dp4a.s32.s32`).", &[Op::Dp4a { a_signed: true, b_signed: true }], false),
    chain("dp4a_u8_s8", DP4A_S32, Ty::Scalar(ScalarType::S32), "`c` plus the dot product of the four bytes of `a`, read as u8, and of `b`, read as int8 (`dp4a.u32.s32`).", &[Op::Dp4a { a_signed: false, b_signed: true }], false),
    chain("dp4a_u8", THREE_U32, Ty::Scalar(U32), "`c` plus the dot product of the four bytes of `a` and of `b`, all read as u8, wrapping (`dp4a.u32.u32`).", &[Op::Dp4a { a_signed: false, b_signed: false }], false),
    chain("prmt", THREE_U32, Ty::Scalar(U32), "The four bytes picked from the eight of `a` (bytes 0–3) and `b` (bytes 4–7) by the four low nibbles of `c`, result byte `i` by nibble `i` (`prmt.b32`): byte moves and constant bytes in one instruction.", &[Op::Prmt], false),
    special("f16_bits_to_f32", X_U32, Ty::Scalar(F32), "The f16 whose bits are the low 16 bits of `x`, as an f32, exactly (`cvt.f32.f16`): the scales of GGUF blocks.", &[Op::Cvt { dst: ScalarType::U16, src: U32, rnd: None, ftz: false, sat: false, relu: false }, Op::Mov { ty: ScalarType::B16 }, Op::Cvt { dst: F32, src: ScalarType::F16, rnd: None, ftz: false, sat: false, relu: false }]),
    special("fma_bf16x2", THREE_U32, Ty::Scalar(U32), "`a × b + c` on each bf16 half of the words, rounded once to nearest even (`fma.rn.bf16x2`, sm_80+): two weights a cycle where a tensor-core operand is formed in registers.", &[Op::Fma { ty: ScalarType::Bf16x2, rnd: Rounding::Rn, ftz: false, sat: false }]),
    chain("cvt_tf32", X_F32, Ty::Scalar(U32), "`x` rounded to tf32 (nearest, ties away), as the 32-bit word `mma_m16n8k8_tf32` takes (`cvt.rna.tf32.f32`, sm_80+).", &[Op::Cvt { dst: ScalarType::Tf32, src: F32, rnd: Some(CvtRounding::Rna), ftz: false, sat: false, relu: false }], false),
    special("pack_e4m3x2", &[p("hi", Ty::Scalar(F32)), p("lo", Ty::Scalar(F32))], Ty::Scalar(U32), "Rounds two f32 to e4m3 (nearest even, saturating at ±448) and packs them into the low 16 bits, `hi` in the upper byte (`cvt.rn.satfinite.e4m3x2.f32`, sm_89+).", &[Op::CvtPackFp8 { to: Fp8::E4m3 }, Op::Cvt { dst: U32, src: ScalarType::U16, rnd: None, ftz: false, sat: false, relu: false }]),
    special("pack_e5m2x2", &[p("hi", Ty::Scalar(F32)), p("lo", Ty::Scalar(F32))], Ty::Scalar(U32), "`pack_e4m3x2` for e5m2 (saturating at ±57344; `cvt.rn.satfinite.e5m2x2.f32`, sm_89+).", &[Op::CvtPackFp8 { to: Fp8::E5m2 }, Op::Cvt { dst: U32, src: ScalarType::U16, rnd: None, ftz: false, sat: false, relu: false }]),
    special("pack_bf16x2", &[p("hi", Ty::Scalar(F32)), p("lo", Ty::Scalar(F32))], Ty::Scalar(U32), "Packs two f32 into one `bf16x2` word, `hi` in the upper half (sm_80+).", &[Op::Cvt { dst: ScalarType::Bf16x2, src: F32, rnd: Some(CvtRounding::Rn), ftz: false, sat: false, relu: false }, Op::Mov { ty: ScalarType::B32 }]),
    special("pack_f16x2", &[p("hi", Ty::Scalar(F32)), p("lo", Ty::Scalar(F32))], Ty::Scalar(U32), "Packs two f32 into one `f16x2` word, `hi` in the upper half (sm_80+).", &[Op::Cvt { dst: ScalarType::F16x2, src: F32, rnd: Some(CvtRounding::Rn), ftz: false, sat: false, relu: false }, Op::Mov { ty: ScalarType::B32 }]),
    // Shared memory, tensor cores and async copies.
    special("shared_array", &[], Ty::Shared, "A block-wide shared array of `N` elements of `T` (`.shared`).", &[]),
    special("dynamic_shared", &[], Ty::Shared, "The block's dynamic shared memory, sized at launch.", &[]),
    special("ldmatrix_x4", LDMATRIX, Ty::Array(U32, 4), "Loads four 8×8 b16 matrices from shared memory (sm_75+).", &[Op::Ldmatrix { count: MatrixCount::X4, trans: false }]),
    special("ldmatrix_x2", LDMATRIX, Ty::Array(U32, 2), "Loads two 8×8 b16 matrices from shared memory (sm_75+).", &[Op::Ldmatrix { count: MatrixCount::X2, trans: false }]),
    special("ldmatrix_x4_trans", LDMATRIX, Ty::Array(U32, 4), "`ldmatrix_x4`, transposed.", &[Op::Ldmatrix { count: MatrixCount::X4, trans: true }]),
    special("ldmatrix_x2_trans", LDMATRIX, Ty::Array(U32, 2), "`ldmatrix_x2`, transposed.", &[Op::Ldmatrix { count: MatrixCount::X2, trans: true }]),
    special("mma_m16n8k16_bf16", MMA, Ty::Array(F32, 4), "`acc + a × b` on one warp's 16×8×16 bf16 tile (`mma.sync`, sm_80+).", &[mma(MmaShape::M16n8k16, ScalarType::Bf16)]),
    special("mma_m16n8k16_f16", MMA, Ty::Array(F32, 4), "`acc + a × b` on one warp's 16×8×16 f16 tile (`mma.sync`, sm_80+).", &[mma(MmaShape::M16n8k16, ScalarType::F16)]),
    special("mma_m16n8k8_tf32", MMA, Ty::Array(F32, 4), "`acc + a × b` on one warp's 16×8×8 tf32 tile (`mma.sync`, sm_80+); operands from `cvt_tf32`.", &[mma(MmaShape::M16n8k8, ScalarType::Tf32)]),
    special("mma_m16n8k32_s8", MMA_INT8, Ty::Array(ScalarType::S32, 4), "`acc + a × b` on one warp's 16×8×32 int8 tile, exact in `i32` (`mma.sync`, sm_80+); four bytes a word.", &[mma_int8(ScalarType::S8)]),
    special("mma_m16n8k32_u8_s8", MMA_INT8, Ty::Array(ScalarType::S32, 4), "`mma_m16n8k32_s8` with the bytes of `a` read as u8 (`mma.sync` `.u8.s8`, sm_80+).", &[mma_int8(ScalarType::U8)]),
    special("cp_async_16", &[p("dst", Ty::Slice { mutable: true }), p("dst_index", Ty::Scalar(U32)), p("src", Ty::Slice { mutable: false }), p("src_index", Ty::Scalar(U32))], Ty::Unit, "Starts a 16-byte copy from global to shared memory (`cp.async.cg`, sm_80+).", &[Op::CpAsync { cache: CacheOp::Cg, bytes: 16, zero_fill: false }]),
    special("cp_async_16_or", &[p("dst", Ty::Slice { mutable: true }), p("dst_index", Ty::Scalar(U32)), p("src", Ty::Slice { mutable: false }), p("src_index", Ty::Scalar(U32)), p("ok", Ty::Scalar(ScalarType::Pred))], Ty::Unit, "`cp_async_16` where `ok`; elsewhere it reads nothing and zero-fills the 16 bytes (`cp.async.cg` with a source size of 0, sm_80+): the edge of a tile.", &[Op::CpAsync { cache: CacheOp::Cg, bytes: 16, zero_fill: true }]),
    special("cp_async_commit", &[], Ty::Unit, "Closes the current group of async copies.", &[Op::CpAsyncCommit]),
    special("cp_async_wait", &[p("pending", Ty::ConstU32)], Ty::Unit, "Waits until at most `pending` committed groups are in flight.", &[Op::CpAsyncWait]),
    // Hopper: mbarriers, the bulk tensor copy (TMA), wgmma, register reallocation.
    chain("fence_proxy_async", &[], Ty::Unit, "Orders this thread's shared-memory writes before later reads by the async proxy: `wgmma` operands, bulk copies, mbarrier setup seen by TMA (`fence.proxy.async.shared::cta`, sm_90+).", &[Op::FenceProxyAsync], false),
    special("mbarrier_init", &[p("bars", Ty::Mbarriers), p("index", Ty::Scalar(U32)), p("count", Ty::Scalar(U32))], Ty::Unit, "Makes `bars[index]` (a `u64` in shared memory) an mbarrier whose phase completes after `count` arrivals and every announced byte (`mbarrier.init`, sm_80+).", &[mbarrier(MbarrierOp::Init)]),
    special("mbarrier_arrive", BARRIER, Ty::Unit, "Arrives once on the mbarrier `bars[index]` (`mbarrier.arrive`, sm_80+).", &[mbarrier(MbarrierOp::Arrive)]),
    special("mbarrier_arrive_expect_tx", &[p("bars", Ty::Mbarriers), p("index", Ty::Scalar(U32)), p("bytes", Ty::Scalar(U32))], Ty::Unit, "Arrives on `bars[index]` and announces `bytes` that bulk copies will complete on it (`mbarrier.arrive.expect_tx`, sm_90+).", &[mbarrier(MbarrierOp::ArriveExpectTx)]),
    special("mbarrier_try_wait_parity", &[p("bars", Ty::Mbarriers), p("index", Ty::Scalar(U32)), p("parity", Ty::Scalar(U32))], Ty::Scalar(ScalarType::Pred), "Whether the phase of `bars[index]` with parity `parity` (0 or 1) has completed, after a bounded wait (`mbarrier.try_wait.parity`, sm_90+); loop until it holds.", &[mbarrier(MbarrierOp::TryWaitParity)]),
    special("tma_load", &[p("dst", Ty::Slice { mutable: true }), p("dst_index", Ty::Scalar(U32)), p("map", Ty::TensorMap), p("coords", Ty::Generic), p("bars", Ty::Mbarriers), p("bar", Ty::Scalar(U32))], Ty::Unit, "Copies the box of `map` at `coords` (`[u32; RANK]`, innermost first) to shared memory at `dst[dst_index..]`, its bytes completing on the mbarrier `bars[bar]` (`cp.async.bulk.tensor`, sm_90+).", &[Op::CpAsyncBulkTensor { dims: 2 }]),
    special("tma_store", &[p("map", Ty::TensorMap), p("coords", Ty::Generic), p("src", Ty::Slice { mutable: false }), p("src_index", Ty::Scalar(U32))], Ty::Unit, "Copies the box at `src[src_index..]` in shared memory to the box of `map` at `coords` (`[u32; RANK]`, innermost first); elements past the tensor's edges are dropped (`cp.async.bulk.tensor` to global, sm_90+). The threads that wrote the tile call `fence_proxy_async()` and synchronize first; `tma_store_commit()` then closes the group.", &[Op::CpAsyncBulkTensorStore { dims: 2 }]),
    special("tma_store_commit", &[], Ty::Unit, "Closes this thread's current group of tensor stores (`cp.async.bulk.commit_group`, sm_90+).", &[Op::CpAsyncBulkCommit]),
    special("tma_store_wait", &[p("pending", Ty::ConstU32)], Ty::Unit, "Waits until at most `pending` of this thread's committed store groups are incomplete: the rest are written to global memory (`cp.async.bulk.wait_group`, sm_90+).", &[Op::CpAsyncBulkWait { read: false }]),
    special("tma_store_wait_read", &[p("pending", Ty::ConstU32)], Ty::Unit, "Waits until at most `pending` of this thread's committed store groups have not yet read their shared source, so the rest's tiles may be overwritten (`cp.async.bulk.wait_group.read`, sm_90+).", &[Op::CpAsyncBulkWait { read: true }]),
    // Clusters (sm_90+): rank, barrier, distributed shared memory, the multicast TMA copy.
    special("cluster_ctarank", &[], Ty::Scalar(U32), "The block's rank in its thread-block cluster, 0 to `cluster_nctarank() - 1` (`%cluster_ctarank`, sm_90+).", &[Op::ClusterReg]),
    special("cluster_nctarank", &[], Ty::Scalar(U32), "How many blocks the cluster holds (`%cluster_nctarank`, sm_90+).", &[Op::ClusterReg]),
    special("cluster_sync", &[], Ty::Unit, "Waits until every thread of every block of the cluster has arrived; shared-memory writes before it are visible to the cluster after it (`barrier.cluster.arrive` + `wait`, sm_90+).", &[Op::ClusterBarrier { wait: false }, Op::ClusterBarrier { wait: true }]),
    special("dsmem_load", &[p("tile", Ty::Slice { mutable: false }), p("index", Ty::Scalar(U32)), p("rank", Ty::Scalar(U32))], Ty::Generic, "`tile[index]` in the shared memory of block `rank` of the cluster (`mapa` + `ld.shared::cluster`, sm_90+).", &[Op::Mapa, Op::LdCluster { ty: U32 }]),
    special("dsmem_store", &[p("tile", Ty::Slice { mutable: true }), p("index", Ty::Scalar(U32)), p("rank", Ty::Scalar(U32)), p("value", Ty::Generic)], Ty::Unit, "Writes `value` to `tile[index]` in the shared memory of block `rank` of the cluster (`mapa` + `st.shared::cluster`, sm_90+).", &[Op::Mapa, Op::StCluster { ty: U32 }]),
    special("mbarrier_arrive_cluster", &[p("bars", Ty::Mbarriers), p("index", Ty::Scalar(U32)), p("rank", Ty::Scalar(U32))], Ty::Unit, "Arrives once, with release at cluster scope, on the mbarrier `bars[index]` of block `rank` of the cluster (`mapa` + `mbarrier.arrive.release.cluster.shared::cluster`, sm_90+).", &[Op::Mapa, mbarrier(MbarrierOp::ArriveCluster)]),
    special("tma_load_multicast", &[p("dst", Ty::Slice { mutable: true }), p("dst_index", Ty::Scalar(U32)), p("map", Ty::TensorMap), p("coords", Ty::Generic), p("bars", Ty::Mbarriers), p("bar", Ty::Scalar(U32)), p("cta_mask", Ty::Scalar(ScalarType::U16))], Ty::Unit, "`tma_load` into every block of the cluster whose bit is set in `cta_mask`: the box lands at `dst[dst_index..]` and completes its bytes on `bars[bar]` of each (`cp.async.bulk.tensor` `.multicast::cluster`, sm_90a).", &[Op::CpAsyncBulkTensorMulticast { dims: 2 }]),
    special("wgmma_desc", &[p("tile", Ty::Slice { mutable: false }), p("index", Ty::Scalar(U32)), p("leading_bytes", Ty::ConstU32), p("stride_bytes", Ty::ConstU32), p("swizzle_bytes", Ty::ConstU32)], Ty::Scalar(ScalarType::U64), "The `wgmma` matrix descriptor of the operand at `tile[index..]` in shared memory: leading and stride byte offsets, swizzle span 0, 32, 64 or 128 bytes.", &[Op::Shr { ty: ScalarType::U64 }]),
    special("align_index", &[p("tile", Ty::Slice { mutable: false }), p("align_bytes", Ty::ConstU32)], Ty::Scalar(U32), "The first index of the shared array `tile` whose address is a multiple of `align_bytes` (a power of two): where a swizzled tile may start in dynamic shared memory.", &[Op::Add { ty: U32, rnd: None, ftz: false, sat: false }]),
    special("wgmma_fence", &[], Ty::Unit, "Orders register accesses to `wgmma` accumulators before the next `wgmma` (`wgmma.fence`, sm_90a).", &[Op::WgmmaFence]),
    special("wgmma_commit_group", &[], Ty::Unit, "Closes the current group of `wgmma`s (`wgmma.commit_group`, sm_90a).", &[Op::WgmmaCommit]),
    special("wgmma_wait_group", &[p("pending", Ty::ConstU32)], Ty::Unit, "Waits until at most `pending` committed `wgmma` groups are in flight (`wgmma.wait_group`, sm_90a).", &[Op::WgmmaWait]),
    special("wgmma_bf16", WGMMA, Ty::Unit, "`acc += a × b` over one warpgroup's 64×N×16 bf16 tile, N = 2 × the length of `acc` (`[f32; N / 2]`, N a multiple of 8 up to 256), operands by descriptor (`wgmma.mma_async`, sm_90a).", &[wgmma_of(WgmmaInput::Bf16, WgmmaInput::Bf16)]),
    special("wgmma_f16", WGMMA, Ty::Unit, "`wgmma_bf16` for f16 operands.", &[wgmma_of(WgmmaInput::F16, WgmmaInput::F16)]),
    special("wgmma_bf16_regs", WGMMA_REGS, Ty::Unit, "`wgmma_bf16` with A in registers: each warp's 16 rows of A as the m16n8k16 A fragment (`[u32; 4]` of bf16 pairs), B by descriptor (`wgmma.mma_async`, sm_90a).", &[wgmma_of(WgmmaInput::Bf16, WgmmaInput::Bf16)]),
    special("wgmma_f16_regs", WGMMA_REGS, Ty::Unit, "`wgmma_bf16_regs` for f16 operands.", &[wgmma_of(WgmmaInput::F16, WgmmaInput::F16)]),
    special("wgmma_tf32", WGMMA_K_MAJOR, Ty::Unit, "`acc += a × b` over one warpgroup's 64×N×8 tile of tf32 operands (f32 in shared memory, read as tf32), both K-major, by descriptor (`wgmma.mma_async`, sm_90a).", &[wgmma_of(WgmmaInput::Tf32, WgmmaInput::Tf32)]),
    special("wgmma_tf32_regs", WGMMA_K_MAJOR_REGS, Ty::Unit, "`wgmma_tf32` with A in registers: each warp's 16 rows as the m16n8k8 tf32 A fragment (`[u32; 4]` of f32 bits).", &[wgmma_of(WgmmaInput::Tf32, WgmmaInput::Tf32)]),
    special("wgmma_e4m3_e4m3", WGMMA_K_MAJOR, Ty::Unit, "`acc += a × b` over one warpgroup's 64×N×32 tile of fp8 operands, A e4m3 and B e4m3, both K-major, by descriptor (`wgmma.mma_async`, sm_90a).", &[wgmma_of(WgmmaInput::E4m3, WgmmaInput::E4m3)]),
    special("wgmma_e4m3_e5m2", WGMMA_K_MAJOR, Ty::Unit, "`wgmma_e4m3_e4m3` with B in e5m2.", &[wgmma_of(WgmmaInput::E4m3, WgmmaInput::E5m2)]),
    special("wgmma_e5m2_e4m3", WGMMA_K_MAJOR, Ty::Unit, "`wgmma_e4m3_e4m3` with A in e5m2.", &[wgmma_of(WgmmaInput::E5m2, WgmmaInput::E4m3)]),
    special("wgmma_e5m2_e5m2", WGMMA_K_MAJOR, Ty::Unit, "`wgmma_e4m3_e4m3` with both operands in e5m2.", &[wgmma_of(WgmmaInput::E5m2, WgmmaInput::E5m2)]),
    special("wgmma_e4m3_e4m3_regs", WGMMA_K_MAJOR_REGS, Ty::Unit, "`wgmma_e4m3_e4m3` with A in registers: each warp's 16 rows as the m16n8k32 A fragment (`[u32; 4]`, four bytes a word).", &[wgmma_of(WgmmaInput::E4m3, WgmmaInput::E4m3)]),
    special("wgmma_e4m3_e5m2_regs", WGMMA_K_MAJOR_REGS, Ty::Unit, "`wgmma_e4m3_e5m2` with A in registers, as `wgmma_e4m3_e4m3_regs`.", &[wgmma_of(WgmmaInput::E4m3, WgmmaInput::E5m2)]),
    special("wgmma_e5m2_e4m3_regs", WGMMA_K_MAJOR_REGS, Ty::Unit, "`wgmma_e5m2_e4m3` with A in registers, as `wgmma_e4m3_e4m3_regs`.", &[wgmma_of(WgmmaInput::E5m2, WgmmaInput::E4m3)]),
    special("wgmma_e5m2_e5m2_regs", WGMMA_K_MAJOR_REGS, Ty::Unit, "`wgmma_e5m2_e5m2` with A in registers, as `wgmma_e4m3_e4m3_regs`.", &[wgmma_of(WgmmaInput::E5m2, WgmmaInput::E5m2)]),
    special("setmaxnreg_inc", &[p("count", Ty::ConstU32)], Ty::Unit, "Raises this warpgroup's registers per thread to `count` (24 to 256, a multiple of 8; `setmaxnreg.inc`, sm_90a).", &[Op::Setmaxnreg { increase: true, count: 240 }]),
    special("setmaxnreg_dec", &[p("count", Ty::ConstU32)], Ty::Unit, "Lowers this warpgroup's registers per thread to `count` (`setmaxnreg.dec`, sm_90a).", &[Op::Setmaxnreg { increase: false, count: 40 }]),
    special("warpgroup_idx", &[], Ty::Scalar(U32), "The thread's warpgroup in its block (`thread_idx().x / 128`).", &[MOV_U32]),
    special("stmatrix_x4", &[p("tile", Ty::Slice { mutable: true }), p("index", Ty::Scalar(U32)), p("v", Ty::Array(U32, 4))], Ty::Unit, "Stores four 8×8 b16 matrices to shared memory, the inverse of `ldmatrix_x4` (`stmatrix`, sm_90+).", &[Op::Stmatrix { count: MatrixCount::X4, trans: false }]),
    chain("griddep_wait", &[], Ty::Unit, "Waits until the grids this one depends on have completed and flushed their memory (`griddepcontrol.wait`, sm_90+).", &[Op::GridDep { kind: GridDepControl::Wait }], false),
    chain("griddep_launch_dependents", &[], Ty::Unit, "Lets the dependent grid launch before this one ends (`griddepcontrol.launch_dependents`, sm_90+).", &[Op::GridDep { kind: GridDepControl::LaunchDependents }], false),
];

#[cfg(test)]
mod tests;
