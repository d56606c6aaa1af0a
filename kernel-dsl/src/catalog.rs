//! What each instruction form needs from the target, written once as data. The verifier and
//! the emitter read [`requirement`]; the CLI prints [`CATALOG`]. A new instruction is one row
//! here plus its printing in `op.rs`.

use crate::op::{AtomOp, CacheOp, MbarrierOp, MmaShape, Op};
use crate::target::{IsaVersion, Target};
use crate::types::{ScalarType, StateSpace};
use std::fmt;

/// What an instruction form needs from the target it is emitted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub min_sm: u32,
    pub min_isa: IsaVersion,
    /// Only `a` targets (sm_90a, sm_100a) have it.
    pub arch_specific: bool,
    /// The highest SM that has it (`wgmma` exists on sm_90a only).
    pub max_sm: Option<u32>,
}

impl Requirement {
    const fn new(min_sm: u32, isa: (u8, u8)) -> Requirement {
        Requirement {
            min_sm,
            min_isa: IsaVersion(isa.0, isa.1),
            arch_specific: false,
            max_sm: None,
        }
    }

    const fn arch(min_sm: u32, isa: (u8, u8), max_sm: u32) -> Requirement {
        Requirement {
            min_sm,
            min_isa: IsaVersion(isa.0, isa.1),
            arch_specific: true,
            max_sm: Some(max_sm),
        }
    }

    /// What a kernel holding forms of both `self` and `other` needs: the higher minimums, the
    /// lower maximum, arch-specific if either is.
    ///
    /// ```
    /// use kernel_dsl::catalog::requirement;
    /// use kernel_dsl::op::Op;
    /// use kernel_dsl::op::WgmmaInput;
    /// let regs = requirement(&Op::Setmaxnreg { increase: true, count: 240 });
    /// let wgmma = requirement(&Op::Wgmma { n: 64, a: WgmmaInput::Bf16, b: WgmmaInput::Bf16 });
    /// assert_eq!(regs.to_string(), "sm_90a or a newer `a` target (PTX ISA 8.0)");
    /// assert_eq!(regs.and(wgmma).to_string(), "sm_90a (PTX ISA 8.0)");
    /// ```
    pub fn and(self, other: Requirement) -> Requirement {
        Requirement {
            min_sm: self.min_sm.max(other.min_sm),
            min_isa: self.min_isa.max(other.min_isa),
            arch_specific: self.arch_specific || other.arch_specific,
            max_sm: match (self.max_sm, other.max_sm) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// Whether `target` can run this form.
    pub fn admits(&self, target: Target) -> bool {
        target.sm() >= self.min_sm
            && self.max_sm.is_none_or(|m| target.sm() <= m)
            && (!self.arch_specific || target.is_arch_specific())
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.arch_specific, self.max_sm) {
            (true, Some(m)) if m == self.min_sm => write!(f, "sm_{}a", self.min_sm)?,
            (true, _) => write!(f, "sm_{}a or a newer `a` target", self.min_sm)?,
            (false, _) => write!(f, "sm_{} or newer", self.min_sm)?,
        }
        write!(f, " (PTX ISA {})", self.min_isa)
    }
}

/// Instruction forms grouped by what they need. Forms that every supported target has share
/// one row each per family so the table stays readable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    IntArith,
    FloatArith,
    HalfArith,
    Bf16Fma,
    Bf16Arith,
    Bf16MinMaxAbsNeg,
    MinMaxNaN,
    Bits,
    BitField,
    Dp4a,
    Compare,
    Cvt,
    CvtToBf16,
    CvtPackF32x2,
    CvtPackFp8,
    CvtFromBf16,
    CvtTf32,
    CvtRelu,
    Move,
    CvtaParam,
    LoadStore,
    LoadNoL1,
    AtomInt,
    AtomF32Add,
    AtomF64Add,
    AtomF16Add,
    AtomF16x2Add,
    AtomBf16Add,
    Atom16BitCas,
    BarSync,
    BarWarpSync,
    BarRed,
    Membar,
    Fence,
    FenceProxyAsync,
    ShflSync,
    VoteSync,
    ReduxSync,
    ApproxF32,
    TanhApprox,
    ApproxHalf,
    IeeeSqrtRcp,
    MmaF16M16n8k8,
    MmaF16M16n8k16,
    MmaBf16,
    MmaTf32,
    MmaS8M16n8k32,
    Ldmatrix,
    Stmatrix,
    CpAsync,
    CpAsyncBulkTensor,
    CpAsyncBulkTensorStore,
    CpAsyncBulkGroup,
    CpAsyncBulkTensorMulticast,
    ClusterBarrier,
    ClusterSpecialReg,
    Dsmem,
    MbarrierArriveCluster,
    Mbarrier,
    MbarrierTryWait,
    MbarrierExpectTx,
    Wgmma,
    Setmaxnreg,
    GridDepControl,
    Nanosleep,
    PrefetchL2,
    ControlFlow,
}

/// One row of the catalog.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub form: Form,
    pub requirement: Requirement,
    /// An example of the syntax, for documentation.
    pub example: &'static str,
}

const fn row(form: Form, requirement: Requirement, example: &'static str) -> Entry {
    Entry {
        form,
        requirement,
        example,
    }
}

/// The oldest target ptxkit emits for; forms marked with it exist on every supported target.
const BASE: Requirement = Requirement::new(70, (6, 0));

/// Every form and what it needs. Rows with `BASE` are older than sm_70 / PTX ISA 6.0.
pub const CATALOG: &[Entry] = &[
    row(
        Form::IntArith,
        BASE,
        "add.s32, mul.wide.u32, mad.lo.s32, div.u32, rem.s64",
    ),
    row(
        Form::FloatArith,
        BASE,
        "add.rn.ftz.f32, fma.rn.f64, div.full.f32, min.f32, abs.f32",
    ),
    row(Form::HalfArith, BASE, "add.rn.f16, fma.rn.f16x2, mul.f16"),
    row(
        Form::Bf16Fma,
        Requirement::new(80, (7, 0)),
        "fma.rn.bf16, fma.rn.bf16x2",
    ),
    row(
        Form::Bf16Arith,
        Requirement::new(90, (7, 8)),
        "add.rn.bf16, mul.rn.bf16x2",
    ),
    row(
        Form::Bf16MinMaxAbsNeg,
        Requirement::new(80, (7, 0)),
        "min.bf16, abs.bf16x2, neg.bf16",
    ),
    row(Form::MinMaxNaN, Requirement::new(80, (7, 0)), "max.NaN.f32"),
    row(
        Form::Bits,
        BASE,
        "and.b32, xor.b64, not.pred, shl.b32, shr.s32",
    ),
    row(
        Form::BitField,
        BASE,
        "bfe.u32, bfi.b32, prmt.b32, popc.b64, clz.b32, brev.b32",
    ),
    row(
        Form::Dp4a,
        Requirement::new(61, (5, 0)),
        "dp4a.s32.s32, dp4a.u32.s32, dp4a.u32.u32",
    ),
    row(Form::Compare, BASE, "setp.lt.f32, setp.hs.u64, selp.f32"),
    row(
        Form::Cvt,
        BASE,
        "cvt.rn.f32.s32, cvt.rzi.s32.f32, cvt.rn.f16.f32, cvt.f32.f16, cvt.u64.u32",
    ),
    row(
        Form::CvtToBf16,
        Requirement::new(80, (7, 0)),
        "cvt.rn.bf16.f32",
    ),
    row(
        Form::CvtPackF32x2,
        Requirement::new(80, (7, 0)),
        "cvt.rn.bf16x2.f32, cvt.rn.f16x2.f32",
    ),
    row(
        Form::CvtPackFp8,
        // sm_90 takes it from PTX ISA 7.8; sm_89 only from 8.1.
        Requirement::new(89, (8, 1)),
        "cvt.rn.satfinite.e4m3x2.f32, cvt.rn.satfinite.e5m2x2.f32",
    ),
    row(
        Form::CvtFromBf16,
        Requirement::new(80, (7, 1)),
        "cvt.f32.bf16",
    ),
    row(
        Form::CvtTf32,
        Requirement::new(80, (7, 0)),
        "cvt.rna.tf32.f32",
    ),
    row(
        Form::CvtRelu,
        Requirement::new(80, (7, 0)),
        "cvt.rn.relu.bf16.f32",
    ),
    row(
        Form::Move,
        BASE,
        "mov.u32 %r1, %tid.x; mov.b32 %r2, {%h1, %h2}; cvta.to.global.u64",
    ),
    row(
        Form::CvtaParam,
        Requirement::new(70, (7, 7)),
        "cvta.param.u64 %rd2, %rd1",
    ),
    row(
        Form::LoadStore,
        BASE,
        "ld.global.nc.v4.f32, st.shared.v2.u32, ld.param.u64, ld.local.f32",
    ),
    row(
        Form::LoadNoL1,
        Requirement::new(70, (7, 4)),
        "ld.global.nc.L1::no_allocate.v4.u32",
    ),
    row(
        Form::AtomInt,
        BASE,
        "atom.global.add.u32, atom.shared.cas.b32, red.global.max.s32",
    ),
    row(
        Form::AtomF32Add,
        BASE,
        "atom.global.add.f32, red.shared.add.f32",
    ),
    row(Form::AtomF64Add, BASE, "atom.global.add.f64"),
    row(
        Form::AtomF16Add,
        Requirement::new(70, (6, 3)),
        "atom.global.add.noftz.f16",
    ),
    row(
        Form::AtomF16x2Add,
        Requirement::new(70, (6, 2)),
        "atom.global.add.noftz.f16x2, red.global.add.noftz.f16x2",
    ),
    row(
        Form::AtomBf16Add,
        Requirement::new(90, (7, 8)),
        "atom.global.add.noftz.bf16x2",
    ),
    row(
        Form::Atom16BitCas,
        Requirement::new(70, (6, 3)),
        "atom.global.cas.b16",
    ),
    row(Form::BarSync, BASE, "bar.sync 0; bar.arrive 1, 64"),
    row(Form::BarWarpSync, BASE, "bar.warp.sync 0xffffffff"),
    row(
        Form::BarRed,
        BASE,
        "bar.red.popc.u32 %r1, 0, %p1; bar.red.and.pred %p2, 0, %p1; bar.red.or.pred %p3, 0, %p1",
    ),
    row(Form::Membar, BASE, "membar.gl"),
    row(Form::Fence, BASE, "fence.acq_rel.gpu"),
    row(
        Form::FenceProxyAsync,
        Requirement::new(90, (8, 0)),
        "fence.proxy.async.shared::cta",
    ),
    row(
        Form::ShflSync,
        BASE,
        "shfl.sync.bfly.b32 %r2, %r1, 16, 31, -1",
    ),
    row(Form::VoteSync, BASE, "vote.sync.ballot.b32 %r1, %p1, -1"),
    row(
        Form::ReduxSync,
        Requirement::new(80, (7, 0)),
        "redux.sync.add.u32 %r2, %r1, -1",
    ),
    row(
        Form::ApproxF32,
        BASE,
        "ex2.approx.ftz.f32, rsqrt.approx.f32, sin.approx.f32",
    ),
    row(
        Form::TanhApprox,
        Requirement::new(75, (7, 0)),
        "tanh.approx.f32",
    ),
    row(
        Form::ApproxHalf,
        Requirement::new(75, (7, 0)),
        "ex2.approx.f16",
    ),
    row(Form::IeeeSqrtRcp, BASE, "sqrt.rn.f32, rcp.rn.f64"),
    row(
        Form::MmaF16M16n8k8,
        Requirement::new(75, (6, 5)),
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
    ),
    row(
        Form::MmaF16M16n8k16,
        Requirement::new(80, (7, 0)),
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    ),
    row(
        Form::MmaBf16,
        Requirement::new(80, (7, 0)),
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    ),
    row(
        Form::MmaTf32,
        Requirement::new(80, (7, 0)),
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    ),
    row(
        Form::MmaS8M16n8k32,
        Requirement::new(80, (7, 0)),
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    ),
    row(
        Form::Ldmatrix,
        Requirement::new(75, (6, 5)),
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
    ),
    row(
        Form::Stmatrix,
        Requirement::new(90, (7, 8)),
        "stmatrix.sync.aligned.m8n8.x4.shared.b16",
    ),
    row(
        Form::CpAsync,
        Requirement::new(80, (7, 0)),
        "cp.async.cg.shared.global [%rd1], [%rd2], 16",
    ),
    row(
        Form::CpAsyncBulkTensor,
        Requirement::new(90, (8, 0)),
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    ),
    // ptxas takes `.multicast::cluster` on plain sm_90 only with an advisory warning (its
    // performance may fall on later plain targets), so the row asks for an `a` target.
    row(
        Form::CpAsyncBulkTensorMulticast,
        Requirement::arch(90, (8, 0), 100),
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
    ),
    row(
        Form::ClusterBarrier,
        Requirement::new(90, (7, 8)),
        "barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned",
    ),
    row(
        Form::ClusterSpecialReg,
        Requirement::new(90, (7, 8)),
        "mov.u32 %r1, %cluster_ctarank; mov.u32 %r2, %cluster_nctarank",
    ),
    row(
        Form::Dsmem,
        Requirement::new(90, (7, 8)),
        "mapa.shared::cluster.u32 %r2, %r1, %r3; ld.shared::cluster.f32; st.shared::cluster.u32",
    ),
    row(
        Form::MbarrierArriveCluster,
        Requirement::new(90, (8, 0)),
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1]",
    ),
    row(
        Form::CpAsyncBulkTensorStore,
        Requirement::new(90, (8, 0)),
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd1, {%r1, %r2}], [%r3]",
    ),
    row(
        Form::CpAsyncBulkGroup,
        Requirement::new(90, (8, 0)),
        "cp.async.bulk.wait_group.read 0",
    ),
    row(
        Form::Mbarrier,
        Requirement::new(80, (7, 0)),
        "mbarrier.init.shared.b64, mbarrier.arrive.shared.b64, mbarrier.test_wait.shared.b64",
    ),
    row(
        Form::MbarrierTryWait,
        Requirement::new(90, (7, 8)),
        "mbarrier.try_wait.parity.shared::cta.b64",
    ),
    row(
        Form::MbarrierExpectTx,
        Requirement::new(90, (8, 0)),
        "mbarrier.arrive.expect_tx.shared::cta.b64",
    ),
    row(
        Form::Wgmma,
        Requirement::arch(90, (8, 0), 90),
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    ),
    row(
        Form::Setmaxnreg,
        Requirement::arch(90, (8, 0), 100),
        "setmaxnreg.inc.sync.aligned.u32 240",
    ),
    row(
        Form::GridDepControl,
        Requirement::new(90, (7, 8)),
        "griddepcontrol.wait",
    ),
    // The PTX ISA manual introduces `nanosleep` in 6.3, but ptxas takes it from 6.2 (its error
    // below that says so), and rows are tight against ptxas.
    row(
        Form::Nanosleep,
        Requirement::new(70, (6, 2)),
        "nanosleep.u32 %r1; nanosleep.u32 100",
    ),
    row(Form::PrefetchL2, BASE, "prefetch.global.L2 [%rd1]"),
    row(Form::ControlFlow, BASE, "bra.uni $L1; ret; exit"),
];

fn is_half(t: ScalarType) -> bool {
    matches!(t, ScalarType::F16 | ScalarType::F16x2)
}

fn is_bf16(t: ScalarType) -> bool {
    matches!(t, ScalarType::Bf16 | ScalarType::Bf16x2)
}

/// Which catalog row an instruction belongs to.
pub fn form(op: &Op) -> Form {
    use ScalarType as T;
    match *op {
        Op::Add { ty, .. } | Op::Sub { ty, .. } | Op::Mul { ty, .. } => {
            if is_bf16(ty) {
                Form::Bf16Arith
            } else if is_half(ty) {
                Form::HalfArith
            } else if ty.is_float() {
                Form::FloatArith
            } else {
                Form::IntArith
            }
        }
        Op::Fma { ty, .. } => {
            if is_bf16(ty) {
                Form::Bf16Fma
            } else if is_half(ty) {
                Form::HalfArith
            } else {
                Form::FloatArith
            }
        }
        Op::Mad { .. } | Op::Rem { .. } => Form::IntArith,
        Op::Div { ty, .. } => {
            if ty.is_float() {
                Form::FloatArith
            } else {
                Form::IntArith
            }
        }
        Op::Min { ty, nan, .. } | Op::Max { ty, nan, .. } => {
            if is_bf16(ty) {
                Form::Bf16MinMaxAbsNeg
            } else if nan {
                Form::MinMaxNaN
            } else if is_half(ty) {
                Form::HalfArith
            } else if ty.is_float() {
                Form::FloatArith
            } else {
                Form::IntArith
            }
        }
        Op::Abs { ty, .. } | Op::Neg { ty, .. } => {
            if is_bf16(ty) {
                Form::Bf16MinMaxAbsNeg
            } else if is_half(ty) {
                Form::HalfArith
            } else if ty.is_float() {
                Form::FloatArith
            } else {
                Form::IntArith
            }
        }
        Op::And { .. }
        | Op::Or { .. }
        | Op::Xor { .. }
        | Op::Not { .. }
        | Op::Shl { .. }
        | Op::Shr { .. } => Form::Bits,
        Op::Bfe { .. }
        | Op::Bfi { .. }
        | Op::Prmt
        | Op::Popc { .. }
        | Op::Clz { .. }
        | Op::Brev { .. } => Form::BitField,
        Op::Dp4a { .. } => Form::Dp4a,
        Op::Setp { .. } | Op::Selp { .. } => Form::Compare,
        Op::Cvt { dst, src, relu, .. } => {
            if relu {
                Form::CvtRelu
            } else if dst == T::Tf32 {
                Form::CvtTf32
            } else if matches!(dst, T::F16x2 | T::Bf16x2) {
                Form::CvtPackF32x2
            } else if dst == T::Bf16 {
                Form::CvtToBf16
            } else if src == T::Bf16 {
                Form::CvtFromBf16
            } else {
                Form::Cvt
            }
        }
        Op::CvtPackFp8 { .. } => Form::CvtPackFp8,
        Op::Cvta {
            space: StateSpace::Param,
            ..
        } => Form::CvtaParam,
        Op::Mov { .. } | Op::Cvta { .. } => Form::Move,
        Op::Ld {
            cache: Some(CacheOp::NoL1),
            ..
        } => Form::LoadNoL1,
        Op::Ld { .. } | Op::St { .. } => Form::LoadStore,
        Op::Atom { op, ty, .. } | Op::Red { op, ty, .. } => match (op, ty) {
            (AtomOp::Add, T::F32) => Form::AtomF32Add,
            (AtomOp::Add, T::F64) => Form::AtomF64Add,
            (AtomOp::Add, T::F16) => Form::AtomF16Add,
            (AtomOp::Add, T::F16x2) => Form::AtomF16x2Add,
            (AtomOp::Add, T::Bf16 | T::Bf16x2) => Form::AtomBf16Add,
            (_, t) if t.bits() == 16 => Form::Atom16BitCas,
            _ => Form::AtomInt,
        },
        Op::BarSync | Op::BarArrive => Form::BarSync,
        Op::BarWarpSync => Form::BarWarpSync,
        Op::BarRed { .. } => Form::BarRed,
        Op::Membar { .. } => Form::Membar,
        Op::Fence { .. } => Form::Fence,
        Op::FenceProxyAsync => Form::FenceProxyAsync,
        Op::Shfl { .. } => Form::ShflSync,
        Op::Vote { .. } => Form::VoteSync,
        Op::Redux { .. } => Form::ReduxSync,
        Op::Approx { func, ty, .. } => {
            if matches!(func, crate::op::ApproxFn::Tanh) {
                Form::TanhApprox
            } else if ty.bits() == 16 || matches!(ty, T::F16x2 | T::Bf16x2) {
                Form::ApproxHalf
            } else {
                Form::ApproxF32
            }
        }
        Op::SqrtIeee { .. } | Op::RcpIeee { .. } => Form::IeeeSqrtRcp,
        Op::Mma { shape, a, .. } => match (shape, a) {
            (_, T::Bf16) => Form::MmaBf16,
            (MmaShape::M16n8k8, T::F16) => Form::MmaF16M16n8k8,
            (_, T::F16) => Form::MmaF16M16n8k16,
            (_, T::S8 | T::U8) => Form::MmaS8M16n8k32,
            _ => Form::MmaTf32,
        },
        Op::Ldmatrix { .. } => Form::Ldmatrix,
        Op::Stmatrix { .. } => Form::Stmatrix,
        Op::CpAsync { .. } | Op::CpAsyncCommit | Op::CpAsyncWait | Op::CpAsyncWaitAll => {
            Form::CpAsync
        }
        Op::CpAsyncBulkTensor { .. } => Form::CpAsyncBulkTensor,
        Op::CpAsyncBulkTensorStore { .. } => Form::CpAsyncBulkTensorStore,
        Op::CpAsyncBulkCommit | Op::CpAsyncBulkWait { .. } => Form::CpAsyncBulkGroup,
        Op::CpAsyncBulkTensorMulticast { .. } => Form::CpAsyncBulkTensorMulticast,
        Op::ClusterBarrier { .. } => Form::ClusterBarrier,
        Op::ClusterReg => Form::ClusterSpecialReg,
        Op::Mapa | Op::LdCluster { .. } | Op::StCluster { .. } => Form::Dsmem,
        Op::Mbarrier { op } => match op {
            MbarrierOp::ArriveCluster => Form::MbarrierArriveCluster,
            MbarrierOp::TryWaitParity => Form::MbarrierTryWait,
            MbarrierOp::ArriveExpectTx => Form::MbarrierExpectTx,
            _ => Form::Mbarrier,
        },
        Op::Wgmma { .. } | Op::WgmmaFence | Op::WgmmaCommit | Op::WgmmaWait => Form::Wgmma,
        Op::Setmaxnreg { .. } => Form::Setmaxnreg,
        Op::GridDep { .. } => Form::GridDepControl,
        Op::Nanosleep => Form::Nanosleep,
        Op::PrefetchL2 => Form::PrefetchL2,
        Op::Bra { .. } | Op::Ret | Op::Exit => Form::ControlFlow,
    }
}

/// The catalog row of a form.
pub fn entry(form: Form) -> &'static Entry {
    CATALOG
        .iter()
        .find(|e| e.form == form)
        .expect("every Form has a catalog row (checked by a unit test)")
}

/// Whether `op` is left out of `target`'s PTX instead of refused there: the grid-dependency
/// controls (`griddep_wait`, `griddep_launch_dependents`) below sm_90, where no launch is
/// programmatic, so a wait has no grid to wait for and an early release no grid to release.
/// Library kernels built for every target can then call them unconditionally.
pub fn elided(op: &Op, target: Target) -> bool {
    matches!(op, Op::GridDep { .. }) && !programmatic_launch(target)
}

/// Whether `target` refuses `op`: the op's requirement does not admit the target and the op
/// is not [`elided`] there. The verifier and the macro's per-target check both ask this.
///
/// ```
/// use kernel_dsl::op::{GridDepControl, Op};
/// use kernel_dsl::{catalog, Target};
/// let wait = Op::GridDep { kind: GridDepControl::Wait };
/// assert!(!catalog::refused(&wait, Target::Sm80)); // left out, not refused
/// assert!(!catalog::refused(&wait, Target::Sm90));
/// ```
pub fn refused(op: &Op, target: Target) -> bool {
    !requirement(op).admits(target) && !elided(op, target)
}

/// Whether `target` has programmatic dependent launch: its grid-dependency row admits it.
pub fn programmatic_launch(target: Target) -> bool {
    entry(Form::GridDepControl).requirement.admits(target)
}

/// What a kernel with a cluster shape (`.reqnctapercluster`) needs: what the cluster
/// instructions need, since a launch in clusters exists exactly where they do.
pub fn cluster_requirement() -> Requirement {
    entry(Form::ClusterBarrier).requirement
}

/// What `op` needs from the target.
pub fn requirement(op: &Op) -> Requirement {
    entry(form(op)).requirement
}

/// What a whole kernel needs: the [`Requirement::and`] of its instructions' requirements, so
/// a kernel mixing `setmaxnreg` (any `a` target from sm_90a) with `wgmma` (sm_90a only) needs
/// exactly sm_90a.
///
/// ```
/// use kernel_dsl::{catalog::kernel_requirement, samples, Target};
/// let need = kernel_requirement(&samples::mma_bf16_16x8x16());
/// assert_eq!(need.min_sm, 80);
/// assert!(!need.admits(Target::Sm75));
/// ```
pub fn kernel_requirement(kernel: &crate::ir::Kernel) -> Requirement {
    let mut need = Requirement::new(0, (0, 0));
    kernel.for_each_inst(&mut |inst| need = need.and(requirement(&inst.op)));
    need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{MmaShape, Op, WgmmaInput};

    #[test]
    fn every_form_has_exactly_one_row() {
        let mut seen = std::collections::HashSet::new();
        for e in CATALOG {
            assert!(seen.insert(e.form), "{:?} listed twice", e.form);
        }
        // Forms are found through `entry`, which panics on a missing row.
        for e in CATALOG {
            assert_eq!(entry(e.form).form, e.form);
        }
        assert_eq!(seen.len(), 67);
    }

    #[test]
    fn dp4a_runs_on_every_supported_target() {
        for (a_signed, b_signed) in [(true, true), (false, true), (false, false)] {
            let r = requirement(&Op::Dp4a { a_signed, b_signed });
            assert!(r.admits(Target::Sm70), "{r}");
            assert_eq!(r.min_sm, 61);
        }
    }

    #[test]
    fn bf16_mma_needs_sm80_and_wgmma_needs_sm90a_exactly() {
        let mma = Op::Mma {
            shape: MmaShape::M16n8k16,
            d: ScalarType::F32,
            a: ScalarType::Bf16,
            b: ScalarType::Bf16,
            c: ScalarType::F32,
        };
        let r = requirement(&mma);
        assert!(!r.admits(Target::Sm75));
        assert!(r.admits(Target::Sm80) && r.admits(Target::Sm121));

        let w = requirement(&Op::Wgmma {
            n: 64,
            a: WgmmaInput::Bf16,
            b: WgmmaInput::Bf16,
        });
        assert!(w.admits(Target::Sm90a));
        assert!(!w.admits(Target::Sm90));
        assert!(!w.admits(Target::Sm100a));
        assert_eq!(w.to_string(), "sm_90a (PTX ISA 8.0)");
    }

    #[test]
    fn a_kernel_with_wgmma_needs_exactly_sm90a_whatever_else_it_holds() {
        let k = crate::samples::wgmma_bf16_64x8x16();
        assert_eq!(kernel_requirement(&k).to_string(), "sm_90a (PTX ISA 8.0)");
        let regs = requirement(&Op::Setmaxnreg {
            increase: true,
            count: 240,
        });
        let wgmma = requirement(&Op::Wgmma {
            n: 64,
            a: WgmmaInput::Bf16,
            b: WgmmaInput::Bf16,
        });
        for need in [regs.and(wgmma), wgmma.and(regs)] {
            assert_eq!(need.to_string(), "sm_90a (PTX ISA 8.0)");
            assert!(need.admits(Target::Sm90a) && !need.admits(Target::Sm100a));
        }
    }

    #[test]
    fn setmaxnreg_runs_on_every_arch_specific_target_from_sm90a() {
        let r = requirement(&Op::Setmaxnreg {
            increase: true,
            count: 240,
        });
        assert!(r.admits(Target::Sm90a) && r.admits(Target::Sm100a));
        assert!(!r.admits(Target::Sm100) && !r.admits(Target::Sm120));
    }
}
