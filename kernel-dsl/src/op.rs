//! Instruction forms as typed values, and the mnemonic each prints as. What a form needs from
//! the target is recorded in [`crate::catalog`], not here.

use crate::types::{ScalarType, StateSpace, VecWidth};
use serde::{Deserialize, Serialize};

/// Floating-point rounding of arithmetic (`.rn`, `.rz`, `.rm`, `.rp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rounding {
    Rn,
    Rz,
    Rm,
    Rp,
}

/// Rounding of `cvt`: float roundings, integer roundings (`.rni` …) and round-away (`.rna`,
/// used for tf32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CvtRounding {
    Rn,
    Rz,
    Rm,
    Rp,
    Rna,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// Integer multiply modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MulMode {
    Lo,
    Hi,
    Wide,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DivMode {
    /// Integer division (no modifier).
    Int,
    /// `div.approx.f32`.
    Approx,
    /// `div.full.f32`.
    Full,
    /// IEEE division with a rounding mode.
    Ieee(Rounding),
}

/// Comparison of `setp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unsigned comparisons on integer types.
    Lo,
    Ls,
    Hi,
    Hs,
    /// Unordered float comparisons.
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheOp {
    Ca,
    Cg,
    Cs,
    Lu,
    Cv,
    Wb,
    Wt,
    /// `.L1::no_allocate` (an eviction priority, sm_70+): the line is not kept in L1, so data
    /// read once does not evict data that is read again.
    NoL1,
}

/// Atomic and reduction operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// The block-wide combination of `bar.red`: the count of threads whose predicate holds
/// (`.popc.u32`), or whether it holds in all of them (`.and.pred`) or in any (`.or.pred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BarRedOp {
    Popc,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// Approximate special functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ApproxFn {
    Ex2,
    Lg2,
    Rsqrt,
    Rcp,
    Sqrt,
    Sin,
    Cos,
    Tanh,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MembarLevel {
    Cta,
    Gl,
    Sys,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

/// `mma.sync` shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MmaShape {
    M16n8k8,
    M16n8k16,
    M16n8k32,
}

/// How many 8×8 matrices one `ldmatrix`/`stmatrix` moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatrixCount {
    X1,
    X2,
    X4,
}

impl MatrixCount {
    pub const fn count(self) -> usize {
        match self {
            MatrixCount::X1 => 1,
            MatrixCount::X2 => 2,
            MatrixCount::X4 => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MbarrierOp {
    Init,
    Arrive,
    /// `mbarrier.arrive.expect_tx`: arrive and announce the bytes a bulk copy will deliver.
    ArriveExpectTx,
    /// `mbarrier.try_wait.parity`: poll for the phase with the given parity.
    TryWaitParity,
    /// `mbarrier.test_wait`: poll a state token.
    TestWait,
    Inval,
    /// `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [addr]`: arrive on an mbarrier
    /// of another CTA of the cluster, `addr` from `mapa`.
    ArriveCluster,
}

/// An 8-bit float format of `cvt` (OCP FP8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Fp8 {
    E4m3,
    E5m2,
}

/// An input type of `wgmma.mma_async`. Both operands have one type, except fp8, where e4m3
/// and e5m2 pair freely. The type fixes the K of one instruction: each row of an operand
/// covers 32 bytes of K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WgmmaInput {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
}

impl WgmmaInput {
    /// Bytes of one element.
    pub const fn bytes(self) -> u32 {
        match self {
            WgmmaInput::F16 | WgmmaInput::Bf16 => 2,
            WgmmaInput::Tf32 => 4,
            WgmmaInput::E4m3 | WgmmaInput::E5m2 => 1,
        }
    }

    /// K of one instruction: 16 for f16/bf16, 8 for tf32, 32 for fp8.
    pub const fn k(self) -> u32 {
        32 / self.bytes()
    }

    /// Whether an operand of this type may be read MN-major (the transpose flags): only the
    /// 16-bit types; tf32 and fp8 operands are K-major.
    pub const fn transposable(self) -> bool {
        self.bytes() == 2
    }

    /// Whether `a` and `b` may be one instruction's operands.
    pub fn pairs_with(self, b: WgmmaInput) -> bool {
        self == b || (self.bytes() == 1 && b.bytes() == 1)
    }

    /// The PTX type suffix.
    pub const fn ptx(self) -> &'static str {
        match self {
            WgmmaInput::F16 => "f16",
            WgmmaInput::Bf16 => "bf16",
            WgmmaInput::Tf32 => "tf32",
            WgmmaInput::E4m3 => "e4m3",
            WgmmaInput::E5m2 => "e5m2",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GridDepControl {
    LaunchDependents,
    Wait,
}

/// Every instruction form the IR can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Add {
        ty: ScalarType,
        rnd: Option<Rounding>,
        ftz: bool,
        sat: bool,
    },
    Sub {
        ty: ScalarType,
        rnd: Option<Rounding>,
        ftz: bool,
        sat: bool,
    },
    /// `mode` is `Some` for integers, `None` for floats.
    Mul {
        ty: ScalarType,
        mode: Option<MulMode>,
        rnd: Option<Rounding>,
        ftz: bool,
        sat: bool,
    },
    /// Integer multiply-add.
    Mad {
        ty: ScalarType,
        mode: MulMode,
    },
    /// Fused float multiply-add; the rounding is mandatory in PTX.
    Fma {
        ty: ScalarType,
        rnd: Rounding,
        ftz: bool,
        sat: bool,
    },
    Div {
        ty: ScalarType,
        mode: DivMode,
        ftz: bool,
    },
    Rem {
        ty: ScalarType,
    },
    Min {
        ty: ScalarType,
        ftz: bool,
        nan: bool,
    },
    Max {
        ty: ScalarType,
        ftz: bool,
        nan: bool,
    },
    Abs {
        ty: ScalarType,
        ftz: bool,
    },
    Neg {
        ty: ScalarType,
        ftz: bool,
    },
    And {
        ty: ScalarType,
    },
    Or {
        ty: ScalarType,
    },
    Xor {
        ty: ScalarType,
    },
    Not {
        ty: ScalarType,
    },
    Shl {
        ty: ScalarType,
    },
    Shr {
        ty: ScalarType,
    },
    Bfe {
        ty: ScalarType,
    },
    Bfi {
        ty: ScalarType,
    },
    Prmt,
    Popc {
        ty: ScalarType,
    },
    Clz {
        ty: ScalarType,
    },
    Brev {
        ty: ScalarType,
    },
    /// `dp4a.atype.btype d, a, b, c`: `c` plus the dot product of the four bytes of `a` and
    /// of `b`, each byte read as signed where its flag says so. `c` and `d` are `.s32` when
    /// either side is signed, `.u32` otherwise.
    Dp4a {
        a_signed: bool,
        b_signed: bool,
    },
    Setp {
        cmp: Cmp,
        ty: ScalarType,
        ftz: bool,
    },
    Selp {
        ty: ScalarType,
    },
    /// `cvt`; with `dst` = `F16x2`/`Bf16x2` and `src` = `F32` it packs two f32 sources.
    Cvt {
        dst: ScalarType,
        src: ScalarType,
        rnd: Option<CvtRounding>,
        ftz: bool,
        sat: bool,
        relu: bool,
    },
    /// `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b`: two f32 rounded to the format and
    /// packed into the 16-bit `d`, `a` in the upper byte.
    CvtPackFp8 {
        to: Fp8,
    },
    Mov {
        ty: ScalarType,
    },
    /// Address conversion between a state space and the generic space.
    Cvta {
        space: StateSpace,
        to_generic: bool,
    },
    Ld {
        space: StateSpace,
        ty: ScalarType,
        vec: Option<VecWidth>,
        nc: bool,
        cache: Option<CacheOp>,
    },
    St {
        space: StateSpace,
        ty: ScalarType,
        vec: Option<VecWidth>,
        cache: Option<CacheOp>,
    },
    Atom {
        space: StateSpace,
        op: AtomOp,
        ty: ScalarType,
    },
    Red {
        space: StateSpace,
        op: AtomOp,
        ty: ScalarType,
    },
    /// `bar.sync id` (`barrier.sync.aligned`): every thread of the CTA must reach it.
    BarSync,
    BarArrive,
    /// `bar.warp.sync 0xffffffff`: every lane of the warp meets here, and memory they wrote
    /// before it (shared stores, completed `cp.async` copies) is visible to all after.
    BarWarpSync,
    /// `bar.red.<op> d, 0, p`: a `bar.sync 0` that also combines `p` over the CTA; every
    /// thread receives the same `d`.
    BarRed {
        op: BarRedOp,
    },
    Membar {
        level: MembarLevel,
    },
    Fence {
        scope: Scope,
    },
    /// `fence.proxy.async.shared::cta`: orders generic-proxy shared writes before async-proxy
    /// reads (wgmma, bulk copies).
    FenceProxyAsync,
    Shfl {
        mode: ShflMode,
    },
    Vote {
        mode: VoteMode,
    },
    Redux {
        op: ReduxOp,
        ty: ScalarType,
    },
    Approx {
        func: ApproxFn,
        ty: ScalarType,
        ftz: bool,
    },
    /// IEEE square root and reciprocal.
    SqrtIeee {
        ty: ScalarType,
        rnd: Rounding,
        ftz: bool,
    },
    RcpIeee {
        ty: ScalarType,
        rnd: Rounding,
        ftz: bool,
    },
    /// `mma.sync.aligned.<shape>.row.col.<d>.<a>.<b>.<c>`.
    Mma {
        shape: MmaShape,
        d: ScalarType,
        a: ScalarType,
        b: ScalarType,
        c: ScalarType,
    },
    Ldmatrix {
        count: MatrixCount,
        trans: bool,
    },
    Stmatrix {
        count: MatrixCount,
        trans: bool,
    },
    /// `cp.async.{ca,cg}.shared.global [dst], [src], bytes(, src_bytes)`.
    CpAsync {
        cache: CacheOp,
        bytes: u32,
        zero_fill: bool,
    },
    CpAsyncCommit,
    CpAsyncWait,
    CpAsyncWaitAll,
    /// Bulk tensor copy, global to shared, completing on an mbarrier.
    CpAsyncBulkTensor {
        dims: u8,
    },
    /// Bulk tensor copy, shared to global (`[map, {coords}], [src]`), completing through the
    /// bulk async-group.
    CpAsyncBulkTensorStore {
        dims: u8,
    },
    /// `cp.async.bulk.commit_group`: closes the thread's current bulk async-group.
    CpAsyncBulkCommit,
    /// `cp.async.bulk.wait_group{.read} n`: waits until at most `n` bulk groups are pending;
    /// with `read`, only until their sources have been read.
    CpAsyncBulkWait {
        read: bool,
    },
    /// The bulk tensor copy written to the same shared offset of every CTA of the cluster in a
    /// 16-bit mask, completing on the mbarrier at the same offset in each.
    CpAsyncBulkTensorMulticast {
        dims: u8,
    },
    Mbarrier {
        op: MbarrierOp,
    },
    /// `barrier.cluster.arrive.aligned` (`wait: false`) or `barrier.cluster.wait.aligned`:
    /// the two halves of a barrier over every thread of the cluster, release/acquire by
    /// default.
    ClusterBarrier {
        wait: bool,
    },
    /// `mov.u32 d, %cluster_ctarank` and the like: a special register only clusters have.
    ClusterReg,
    /// `mapa.shared::cluster.u32 d, a, rank`: the shared address `a` of this CTA mapped to
    /// the same offset in CTA `rank` of the cluster.
    Mapa,
    /// `ld.shared::cluster.<ty>`: a load from the shared memory of a CTA of the cluster.
    LdCluster {
        ty: ScalarType,
    },
    /// `st.shared::cluster.<ty>`.
    StCluster {
        ty: ScalarType,
    },
    /// `wgmma.mma_async.sync.aligned.m64n<n>k<k>.f32.<a>.<b>`, B described by a shared-memory
    /// descriptor, A by one too or held in registers.
    Wgmma {
        n: u32,
        a: WgmmaInput,
        b: WgmmaInput,
    },
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait,
    Setmaxnreg {
        increase: bool,
        count: u32,
    },
    GridDep {
        kind: GridDepControl,
    },
    /// `nanosleep.u32 ns` (one u32 register or immediate source): a scheduler hint in a
    /// spin-wait.
    Nanosleep,
    /// `prefetch.global.L2 [a]` (one global address source): asks for the line holding `a`
    /// in L2, holding no register and nothing to wait for.
    PrefetchL2,
    /// Branch to a label; produced only by the emitter's lowering of structured control flow.
    Bra {
        uni: bool,
    },
    Ret,
    Exit,
}

fn rnd(r: Rounding) -> &'static str {
    match r {
        Rounding::Rn => ".rn",
        Rounding::Rz => ".rz",
        Rounding::Rm => ".rm",
        Rounding::Rp => ".rp",
    }
}

fn cvt_rnd(r: CvtRounding) -> &'static str {
    match r {
        CvtRounding::Rn => ".rn",
        CvtRounding::Rz => ".rz",
        CvtRounding::Rm => ".rm",
        CvtRounding::Rp => ".rp",
        CvtRounding::Rna => ".rna",
        CvtRounding::Rni => ".rni",
        CvtRounding::Rzi => ".rzi",
        CvtRounding::Rmi => ".rmi",
        CvtRounding::Rpi => ".rpi",
    }
}

fn flag(on: bool, text: &'static str) -> &'static str {
    if on {
        text
    } else {
        ""
    }
}

fn space(s: StateSpace) -> String {
    s.ptx().map(|p| format!(".{p}")).unwrap_or_default()
}

fn cache(c: Option<CacheOp>) -> &'static str {
    match c {
        None => "",
        Some(CacheOp::Ca) => ".ca",
        Some(CacheOp::Cg) => ".cg",
        Some(CacheOp::Cs) => ".cs",
        Some(CacheOp::Lu) => ".lu",
        Some(CacheOp::Cv) => ".cv",
        Some(CacheOp::Wb) => ".wb",
        Some(CacheOp::Wt) => ".wt",
        Some(CacheOp::NoL1) => ".L1::no_allocate",
    }
}

fn vec(v: Option<VecWidth>) -> String {
    v.map(|v| format!(".{}", v.ptx())).unwrap_or_default()
}

impl Cmp {
    pub const fn ptx(self) -> &'static str {
        match self {
            Cmp::Eq => "eq",
            Cmp::Ne => "ne",
            Cmp::Lt => "lt",
            Cmp::Le => "le",
            Cmp::Gt => "gt",
            Cmp::Ge => "ge",
            Cmp::Lo => "lo",
            Cmp::Ls => "ls",
            Cmp::Hi => "hi",
            Cmp::Hs => "hs",
            Cmp::Equ => "equ",
            Cmp::Neu => "neu",
            Cmp::Ltu => "ltu",
            Cmp::Leu => "leu",
            Cmp::Gtu => "gtu",
            Cmp::Geu => "geu",
            Cmp::Num => "num",
            Cmp::Nan => "nan",
        }
    }
}

impl AtomOp {
    pub const fn ptx(self) -> &'static str {
        match self {
            AtomOp::Add => "add",
            AtomOp::Min => "min",
            AtomOp::Max => "max",
            AtomOp::Inc => "inc",
            AtomOp::Dec => "dec",
            AtomOp::And => "and",
            AtomOp::Or => "or",
            AtomOp::Xor => "xor",
            AtomOp::Exch => "exch",
            AtomOp::Cas => "cas",
        }
    }
}

impl ApproxFn {
    pub const fn ptx(self) -> &'static str {
        match self {
            ApproxFn::Ex2 => "ex2",
            ApproxFn::Lg2 => "lg2",
            ApproxFn::Rsqrt => "rsqrt",
            ApproxFn::Rcp => "rcp",
            ApproxFn::Sqrt => "sqrt",
            ApproxFn::Sin => "sin",
            ApproxFn::Cos => "cos",
            ApproxFn::Tanh => "tanh",
        }
    }
}

impl ReduxOp {
    pub const fn ptx(self) -> &'static str {
        match self {
            ReduxOp::Add => "add",
            ReduxOp::Min => "min",
            ReduxOp::Max => "max",
            ReduxOp::And => "and",
            ReduxOp::Or => "or",
            ReduxOp::Xor => "xor",
        }
    }
}

impl BarRedOp {
    /// The operation and its type, as `bar.red` spells them (`popc.u32`).
    pub const fn ptx(self) -> &'static str {
        match self {
            BarRedOp::Popc => "popc.u32",
            BarRedOp::And => "and.pred",
            BarRedOp::Or => "or.pred",
        }
    }

    /// The type of the result register.
    pub const fn result(self) -> ScalarType {
        match self {
            BarRedOp::Popc => ScalarType::U32,
            BarRedOp::And | BarRedOp::Or => ScalarType::Pred,
        }
    }
}

impl MmaShape {
    pub const fn ptx(self) -> &'static str {
        match self {
            MmaShape::M16n8k8 => "m16n8k8",
            MmaShape::M16n8k16 => "m16n8k16",
            MmaShape::M16n8k32 => "m16n8k32",
        }
    }
}

/// Float arithmetic on 16-bit types ignores `.rn` spelling differences; integer arithmetic
/// takes `.lo` etc. This prints the modifiers shared by add/sub/mul.
fn arith(
    name: &str,
    ty: ScalarType,
    mode: Option<MulMode>,
    r: Option<Rounding>,
    ftz: bool,
    sat: bool,
) -> String {
    let mode = match mode {
        Some(MulMode::Lo) => ".lo",
        Some(MulMode::Hi) => ".hi",
        Some(MulMode::Wide) => ".wide",
        None => "",
    };
    format!(
        "{name}{mode}{}{}{}.{ty}",
        r.map(rnd).unwrap_or(""),
        flag(ftz, ".ftz"),
        flag(sat, ".sat")
    )
}

impl Op {
    /// The opcode with every modifier, as PTX writes it (`ld.global.nc.v4.f32`).
    pub fn mnemonic(&self) -> String {
        match *self {
            Op::Add { ty, rnd, ftz, sat } => arith("add", ty, None, rnd, ftz, sat),
            Op::Sub { ty, rnd, ftz, sat } => arith("sub", ty, None, rnd, ftz, sat),
            Op::Mul { ty, mode, rnd, ftz, sat } => arith("mul", ty, mode, rnd, ftz, sat),
            Op::Mad { ty, mode } => arith("mad", ty, Some(mode), None, false, false),
            Op::Fma { ty, rnd: r, ftz, sat } => arith("fma", ty, None, Some(r), ftz, sat),
            Op::Div { ty, mode, ftz } => {
                let m = match mode {
                    DivMode::Int => String::new(),
                    DivMode::Approx => ".approx".into(),
                    DivMode::Full => ".full".into(),
                    DivMode::Ieee(r) => rnd(r).into(),
                };
                format!("div{m}{}.{ty}", flag(ftz, ".ftz"))
            }
            Op::Rem { ty } => format!("rem.{ty}"),
            Op::Min { ty, ftz, nan } => format!("min{}{}.{ty}", flag(ftz, ".ftz"), flag(nan, ".NaN")),
            Op::Max { ty, ftz, nan } => format!("max{}{}.{ty}", flag(ftz, ".ftz"), flag(nan, ".NaN")),
            Op::Abs { ty, ftz } => format!("abs{}.{ty}", flag(ftz, ".ftz")),
            Op::Neg { ty, ftz } => format!("neg{}.{ty}", flag(ftz, ".ftz")),
            Op::And { ty } => format!("and.{ty}"),
            Op::Or { ty } => format!("or.{ty}"),
            Op::Xor { ty } => format!("xor.{ty}"),
            Op::Not { ty } => format!("not.{ty}"),
            Op::Shl { ty } => format!("shl.{ty}"),
            Op::Shr { ty } => format!("shr.{ty}"),
            Op::Bfe { ty } => format!("bfe.{ty}"),
            Op::Bfi { ty } => format!("bfi.{ty}"),
            Op::Prmt => "prmt.b32".into(),
            Op::Popc { ty } => format!("popc.{ty}"),
            Op::Clz { ty } => format!("clz.{ty}"),
            Op::Brev { ty } => format!("brev.{ty}"),
            Op::Dp4a { a_signed, b_signed } => {
                let side = |signed: bool| if signed { "s32" } else { "u32" };
                format!("dp4a.{}.{}", side(a_signed), side(b_signed))
            }
            Op::Setp { cmp, ty, ftz } => format!("setp.{}{}.{ty}", cmp.ptx(), flag(ftz, ".ftz")),
            Op::Selp { ty } => format!("selp.{ty}"),
            Op::Cvt { dst, src, rnd: r, ftz, sat, relu } => format!(
                "cvt{}{}{}{}.{dst}.{src}",
                r.map(cvt_rnd).unwrap_or(""),
                flag(ftz, ".ftz"),
                flag(relu, ".relu"),
                flag(sat, ".sat"),
            ),
            Op::CvtPackFp8 { to } => format!(
                "cvt.rn.satfinite.{}.f32",
                match to {
                    Fp8::E4m3 => "e4m3x2",
                    Fp8::E5m2 => "e5m2x2",
                }
            ),
            Op::Mov { ty } => format!("mov.{ty}"),
            Op::Cvta { space: s, to_generic } => {
                if to_generic {
                    format!("cvta{}.u64", space(s))
                } else {
                    format!("cvta.to{}.u64", space(s))
                }
            }
            Op::Ld { space: s, ty, vec: v, nc, cache: c } => {
                format!("ld{}{}{}{}.{ty}", space(s), flag(nc, ".nc"), cache(c), vec(v))
            }
            Op::St { space: s, ty, vec: v, cache: c } => {
                format!("st{}{}{}.{ty}", space(s), cache(c), vec(v))
            }
            Op::Atom { space: s, op, ty } => {
                let noftz = if op == AtomOp::Add && matches!(ty, ScalarType::F16 | ScalarType::Bf16 | ScalarType::F16x2 | ScalarType::Bf16x2) {
                    ".noftz"
                } else {
                    ""
                };
                format!("atom{}.{}{noftz}.{ty}", space(s), op.ptx())
            }
            Op::Red { space: s, op, ty } => {
                let noftz = if op == AtomOp::Add && matches!(ty, ScalarType::F16 | ScalarType::Bf16 | ScalarType::F16x2 | ScalarType::Bf16x2) {
                    ".noftz"
                } else {
                    ""
                };
                format!("red{}.{}{noftz}.{ty}", space(s), op.ptx())
            }
            Op::BarSync => "bar.sync".into(),
            Op::BarWarpSync => "bar.warp.sync".into(),
            Op::BarArrive => "bar.arrive".into(),
            Op::BarRed { op } => format!("bar.red.{}", op.ptx()),
            Op::Membar { level } => match level {
                MembarLevel::Cta => "membar.cta".into(),
                MembarLevel::Gl => "membar.gl".into(),
                MembarLevel::Sys => "membar.sys".into(),
            },
            Op::Fence { scope } => match scope {
                Scope::Cta => "fence.acq_rel.cta".into(),
                Scope::Cluster => "fence.acq_rel.cluster".into(),
                Scope::Gpu => "fence.acq_rel.gpu".into(),
                Scope::Sys => "fence.acq_rel.sys".into(),
            },
            Op::FenceProxyAsync => "fence.proxy.async.shared::cta".into(),
            Op::Shfl { mode } => {
                let m = match mode {
                    ShflMode::Up => "up",
                    ShflMode::Down => "down",
                    ShflMode::Bfly => "bfly",
                    ShflMode::Idx => "idx",
                };
                format!("shfl.sync.{m}.b32")
            }
            Op::Vote { mode } => match mode {
                VoteMode::All => "vote.sync.all.pred".into(),
                VoteMode::Any => "vote.sync.any.pred".into(),
                VoteMode::Uni => "vote.sync.uni.pred".into(),
                VoteMode::Ballot => "vote.sync.ballot.b32".into(),
            },
            Op::Redux { op, ty } => format!("redux.sync.{}.{ty}", op.ptx()),
            Op::Approx { func, ty, ftz } => format!("{}.approx{}.{ty}", func.ptx(), flag(ftz, ".ftz")),
            Op::SqrtIeee { ty, rnd: r, ftz } => format!("sqrt{}{}.{ty}", rnd(r), flag(ftz, ".ftz")),
            Op::RcpIeee { ty, rnd: r, ftz } => format!("rcp{}{}.{ty}", rnd(r), flag(ftz, ".ftz")),
            Op::Mma { shape, d, a, b, c } => {
                format!("mma.sync.aligned.{}.row.col.{d}.{a}.{b}.{c}", shape.ptx())
            }
            Op::Ldmatrix { count, trans } => format!(
                "ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16",
                count.count(),
                flag(trans, ".trans")
            ),
            Op::Stmatrix { count, trans } => format!(
                "stmatrix.sync.aligned.m8n8.x{}{}.shared.b16",
                count.count(),
                flag(trans, ".trans")
            ),
            Op::CpAsync { cache: c, .. } => format!("cp.async{}.shared.global", cache(Some(c))),
            Op::CpAsyncCommit => "cp.async.commit_group".into(),
            Op::CpAsyncWait => "cp.async.wait_group".into(),
            Op::CpAsyncWaitAll => "cp.async.wait_all".into(),
            Op::CpAsyncBulkTensor { dims } => format!(
                "cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            ),
            Op::CpAsyncBulkTensorStore { dims } => {
                format!("cp.async.bulk.tensor.{dims}d.global.shared::cta.tile.bulk_group")
            }
            Op::CpAsyncBulkCommit => "cp.async.bulk.commit_group".into(),
            Op::CpAsyncBulkWait { read } => {
                format!("cp.async.bulk.wait_group{}", flag(read, ".read"))
            }
            Op::Mbarrier { op } => match op {
                MbarrierOp::Init => "mbarrier.init.shared.b64".into(),
                MbarrierOp::Arrive => "mbarrier.arrive.shared.b64".into(),
                MbarrierOp::ArriveExpectTx => "mbarrier.arrive.expect_tx.shared::cta.b64".into(),
                MbarrierOp::TryWaitParity => "mbarrier.try_wait.parity.shared::cta.b64".into(),
                MbarrierOp::TestWait => "mbarrier.test_wait.shared.b64".into(),
                MbarrierOp::Inval => "mbarrier.inval.shared.b64".into(),
                MbarrierOp::ArriveCluster => "mbarrier.arrive.release.cluster.shared::cluster.b64".into(),
            },
            Op::CpAsyncBulkTensorMulticast { dims } => format!(
                "cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
            ),
            Op::ClusterBarrier { wait } => {
                format!("barrier.cluster.{}.aligned", if wait { "wait" } else { "arrive" })
            }
            Op::ClusterReg => "mov.u32".into(),
            Op::Mapa => "mapa.shared::cluster.u32".into(),
            Op::LdCluster { ty } => format!("ld.shared::cluster.{ty}"),
            Op::StCluster { ty } => format!("st.shared::cluster.{ty}"),
            Op::Wgmma { n, a, b } => format!(
                "wgmma.mma_async.sync.aligned.m64n{n}k{}.f32.{}.{}",
                a.k(),
                a.ptx(),
                b.ptx()
            ),
            Op::WgmmaFence => "wgmma.fence.sync.aligned".into(),
            Op::WgmmaCommit => "wgmma.commit_group.sync.aligned".into(),
            Op::WgmmaWait => "wgmma.wait_group.sync.aligned".into(),
            Op::Setmaxnreg { increase, .. } => {
                format!("setmaxnreg.{}.sync.aligned.u32", if increase { "inc" } else { "dec" })
            }
            Op::GridDep { kind } => match kind {
                GridDepControl::LaunchDependents => "griddepcontrol.launch_dependents".into(),
                GridDepControl::Wait => "griddepcontrol.wait".into(),
            },
            Op::Nanosleep => "nanosleep.u32".into(),
            Op::PrefetchL2 => "prefetch.global.L2".into(),
            Op::Bra { uni } => format!("bra{}", flag(uni, ".uni")),
            Op::Ret => "ret".into(),
            Op::Exit => "exit".into(),
        }
    }

    /// Whether every thread of the CTA must execute this instruction together.
    pub fn is_cta_barrier(&self) -> bool {
        matches!(
            self,
            Op::BarSync | Op::BarRed { .. } | Op::ClusterBarrier { .. }
        )
    }
}
