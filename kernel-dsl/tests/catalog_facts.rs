//! The catalog's facts, checked against NVIDIA's assembler: for every instruction form, a probe
//! kernel assembles at the lowest target the catalog admits, and the same module retargeted one
//! step lower (or off its `a` target) is rejected by ptxas. A row that claims too little fails the
//! first half; a row that claims too much fails the second.

use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::catalog::{self, Form, CATALOG};
use kernel_dsl::ir::{AddrBase, Imm, Kernel, Operand, ParamType, Reg, SpecialReg};
use kernel_dsl::op::*;
use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::types::{ScalarType as T, StateSpace, VecWidth};
use kernel_dsl::{emit, Target};

struct Probe {
    b: KernelBuilder,
    global: Reg,
    shared: Reg,
}

impl Probe {
    fn new() -> Probe {
        let mut b = KernelBuilder::new("probe");
        let sym = b.raw_param(
            "out",
            ParamType::GlobalPtr {
                elem: T::B32,
                mutable: true,
            },
        );
        let raw = b.reg(T::U64);
        b.inst(
            Op::Ld {
                space: StateSpace::Param,
                ty: T::U64,
                vec: None,
                nc: false,
                cache: None,
            },
            vec![raw.into()],
            vec![Operand::Addr {
                base: AddrBase::Symbol(sym),
                offset: 0,
            }],
        );
        let global = b.reg(T::U64);
        b.inst(
            Op::Cvta {
                space: StateSpace::Global,
                to_generic: false,
            },
            vec![global.into()],
            vec![raw.into()],
        );
        let smem = b.raw_shared("scratch", T::B32, 512);
        let shared = b.reg(T::U32);
        b.inst(
            Op::Mov { ty: T::U32 },
            vec![shared.into()],
            vec![Operand::Symbol(smem)],
        );
        Probe { b, global, shared }
    }

    /// A register of `ty` holding a small non-zero value.
    fn val(&mut self, ty: T) -> Reg {
        let r = self.b.reg(ty);
        if ty == T::Pred {
            let z = self.val(T::U32);
            self.b.inst(
                Op::Setp {
                    cmp: Cmp::Eq,
                    ty: T::U32,
                    ftz: false,
                },
                vec![r.into()],
                vec![z.into(), z.into()],
            );
            return r;
        }
        let (mov, imm) = match ty {
            T::F32 => (T::F32, Imm::f32(1.5)),
            T::F64 => (T::F64, Imm::f64(1.5)),
            T::F16 => (T::B16, Imm::Int(0x3C00)),
            T::Bf16 => (T::B16, Imm::Int(0x3F80)),
            t if t.bits() == 16 => (T::B16, Imm::Int(1)),
            t if t.bits() == 32 => (T::B32, Imm::Int(0x3C00_3C00)),
            _ => (T::B64, Imm::Int(1)),
        };
        self.b
            .inst(Op::Mov { ty: mov }, vec![r.into()], vec![Operand::Imm(imm)]);
        r
    }

    fn vals(&mut self, ty: T, n: usize) -> Operand {
        Operand::Vector((0..n).map(|_| Operand::Reg(self.val(ty))).collect())
    }

    fn gaddr(&self) -> Operand {
        Operand::Addr {
            base: AddrBase::Reg(self.global),
            offset: 0,
        }
    }

    fn saddr(&self) -> Operand {
        Operand::Addr {
            base: AddrBase::Reg(self.shared),
            offset: 0,
        }
    }

    /// `d = op(srcs…)` with fresh source registers of the given types.
    fn compute(&mut self, op: Op, dst: T, srcs: &[T]) {
        let d = self.b.reg(dst);
        let s: Vec<Operand> = srcs.iter().map(|&t| Operand::Reg(self.val(t))).collect();
        self.b.inst(op, vec![d.into()], s);
    }

    fn finish(self) -> Kernel {
        self.b.finish()
    }
}

fn probe(form: Form) -> Kernel {
    let mut p = Probe::new();
    let rn = Some(Rounding::Rn);
    match form {
        Form::IntArith => p.compute(
            Op::Add {
                ty: T::S32,
                rnd: None,
                ftz: false,
                sat: false,
            },
            T::S32,
            &[T::S32, T::S32],
        ),
        Form::FloatArith => p.compute(
            Op::Add {
                ty: T::F32,
                rnd: rn,
                ftz: true,
                sat: false,
            },
            T::F32,
            &[T::F32, T::F32],
        ),
        Form::HalfArith => p.compute(
            Op::Add {
                ty: T::F16,
                rnd: rn,
                ftz: false,
                sat: false,
            },
            T::F16,
            &[T::F16, T::F16],
        ),
        Form::Bf16Fma => p.compute(
            Op::Fma {
                ty: T::Bf16,
                rnd: Rounding::Rn,
                ftz: false,
                sat: false,
            },
            T::Bf16,
            &[T::Bf16; 3],
        ),
        Form::Bf16Arith => p.compute(
            Op::Add {
                ty: T::Bf16,
                rnd: rn,
                ftz: false,
                sat: false,
            },
            T::Bf16,
            &[T::Bf16, T::Bf16],
        ),
        Form::Bf16MinMaxAbsNeg => p.compute(
            Op::Min {
                ty: T::Bf16,
                ftz: false,
                nan: false,
            },
            T::Bf16,
            &[T::Bf16, T::Bf16],
        ),
        Form::MinMaxNaN => p.compute(
            Op::Max {
                ty: T::F32,
                ftz: false,
                nan: true,
            },
            T::F32,
            &[T::F32, T::F32],
        ),
        Form::Bits => p.compute(Op::Xor { ty: T::B32 }, T::B32, &[T::B32, T::B32]),
        Form::BitField => p.compute(Op::Bfe { ty: T::U32 }, T::U32, &[T::U32, T::U32, T::U32]),
        Form::Dp4a => p.compute(
            Op::Dp4a {
                a_signed: false,
                b_signed: true,
            },
            T::S32,
            &[T::U32, T::U32, T::S32],
        ),
        Form::Compare => p.compute(
            Op::Setp {
                cmp: Cmp::Lt,
                ty: T::F32,
                ftz: false,
            },
            T::Pred,
            &[T::F32, T::F32],
        ),
        Form::Cvt => p.compute(
            Op::Cvt {
                dst: T::F32,
                src: T::S32,
                rnd: Some(CvtRounding::Rn),
                ftz: false,
                sat: false,
                relu: false,
            },
            T::F32,
            &[T::S32],
        ),
        Form::CvtToBf16 => p.compute(
            Op::Cvt {
                dst: T::Bf16,
                src: T::F32,
                rnd: Some(CvtRounding::Rn),
                ftz: false,
                sat: false,
                relu: false,
            },
            T::Bf16,
            &[T::F32],
        ),
        Form::CvtPackF32x2 => p.compute(
            Op::Cvt {
                dst: T::Bf16x2,
                src: T::F32,
                rnd: Some(CvtRounding::Rn),
                ftz: false,
                sat: false,
                relu: false,
            },
            T::B32,
            &[T::F32, T::F32],
        ),
        Form::CvtPackFp8 => p.compute(Op::CvtPackFp8 { to: Fp8::E5m2 }, T::B16, &[T::F32, T::F32]),
        Form::CvtFromBf16 => p.compute(
            Op::Cvt {
                dst: T::F32,
                src: T::Bf16,
                rnd: None,
                ftz: false,
                sat: false,
                relu: false,
            },
            T::F32,
            &[T::Bf16],
        ),
        Form::CvtTf32 => p.compute(
            Op::Cvt {
                dst: T::Tf32,
                src: T::F32,
                rnd: Some(CvtRounding::Rna),
                ftz: false,
                sat: false,
                relu: false,
            },
            T::B32,
            &[T::F32],
        ),
        Form::CvtRelu => p.compute(
            Op::Cvt {
                dst: T::Bf16,
                src: T::F32,
                rnd: Some(CvtRounding::Rn),
                ftz: false,
                sat: false,
                relu: true,
            },
            T::Bf16,
            &[T::F32],
        ),
        Form::Move => {
            let d = p.b.reg(T::U32);
            p.b.inst(
                Op::Mov { ty: T::U32 },
                vec![d.into()],
                vec![Operand::Special(SpecialReg::LaneId)],
            );
        }
        Form::CvtaParam => {
            let d = p.b.reg(T::U64);
            p.b.inst(
                Op::Cvta {
                    space: StateSpace::Param,
                    to_generic: true,
                },
                vec![d.into()],
                vec![p.global.into()],
            );
        }
        Form::LoadStore => {
            let v = Operand::Vector((0..4).map(|_| Operand::Reg(p.b.reg(T::F32))).collect());
            let a = p.gaddr();
            p.b.inst(
                Op::Ld {
                    space: StateSpace::Global,
                    ty: T::F32,
                    vec: Some(VecWidth::V4),
                    nc: true,
                    cache: None,
                },
                vec![v.clone()],
                vec![a.clone()],
            );
            p.b.inst(
                Op::St {
                    space: StateSpace::Global,
                    ty: T::F32,
                    vec: Some(VecWidth::V4),
                    cache: None,
                },
                vec![],
                vec![a, v],
            );
        }
        Form::AtomInt => atom(&mut p, AtomOp::Add, T::U32, true),
        Form::AtomF32Add => atom(&mut p, AtomOp::Add, T::F32, false),
        Form::AtomF64Add => atom(&mut p, AtomOp::Add, T::F64, true),
        Form::AtomF16Add => atom(&mut p, AtomOp::Add, T::F16, true),
        Form::AtomF16x2Add => atom(&mut p, AtomOp::Add, T::F16x2, true),
        Form::AtomBf16Add => atom(&mut p, AtomOp::Add, T::Bf16x2, true),
        Form::Atom16BitCas => {
            let d = p.b.reg(T::B16);
            let (x, y) = (p.val(T::B16), p.val(T::B16));
            let a = p.gaddr();
            p.b.inst(
                Op::Atom {
                    space: StateSpace::Global,
                    op: AtomOp::Cas,
                    ty: T::B16,
                },
                vec![d.into()],
                vec![a, x.into(), y.into()],
            );
        }
        Form::BarSync => {
            p.b.inst(Op::BarSync, vec![], vec![Operand::Imm(Imm::Int(0))])
        }
        Form::BarWarpSync => p.b.inst(
            Op::BarWarpSync,
            vec![],
            vec![Operand::Imm(Imm::Int(0xffff_ffff))],
        ),
        Form::BarRed => {
            let v = p.val(T::Pred);
            for op in [BarRedOp::Popc, BarRedOp::And, BarRedOp::Or] {
                let d = p.b.reg(op.result());
                p.b.inst(
                    Op::BarRed { op },
                    vec![d.into()],
                    vec![Operand::Imm(Imm::Int(0)), v.into()],
                );
            }
        }
        Form::Membar => p.b.inst(
            Op::Membar {
                level: MembarLevel::Gl,
            },
            vec![],
            vec![],
        ),
        Form::Fence => p.b.inst(Op::Fence { scope: Scope::Gpu }, vec![], vec![]),
        Form::FenceProxyAsync => p.b.inst(Op::FenceProxyAsync, vec![], vec![]),
        Form::ShflSync => {
            let d = p.b.reg(T::B32);
            let v = p.val(T::B32);
            let imm = |v: i64| Operand::Imm(Imm::Int(v));
            p.b.inst(
                Op::Shfl {
                    mode: ShflMode::Bfly,
                },
                vec![d.into()],
                vec![v.into(), imm(16), imm(31), imm(-1)],
            );
        }
        Form::VoteSync => {
            let d = p.b.reg(T::B32);
            let v = p.val(T::Pred);
            p.b.inst(
                Op::Vote {
                    mode: VoteMode::Ballot,
                },
                vec![d.into()],
                vec![v.into(), Operand::Imm(Imm::Int(-1))],
            );
        }
        Form::ReduxSync => {
            let d = p.b.reg(T::U32);
            let v = p.val(T::U32);
            p.b.inst(
                Op::Redux {
                    op: ReduxOp::Add,
                    ty: T::U32,
                },
                vec![d.into()],
                vec![v.into(), Operand::Imm(Imm::Int(-1))],
            );
        }
        Form::ApproxF32 => p.compute(
            Op::Approx {
                func: ApproxFn::Ex2,
                ty: T::F32,
                ftz: true,
            },
            T::F32,
            &[T::F32],
        ),
        Form::TanhApprox => p.compute(
            Op::Approx {
                func: ApproxFn::Tanh,
                ty: T::F32,
                ftz: false,
            },
            T::F32,
            &[T::F32],
        ),
        Form::ApproxHalf => p.compute(
            Op::Approx {
                func: ApproxFn::Ex2,
                ty: T::F16,
                ftz: false,
            },
            T::F16,
            &[T::F16],
        ),
        Form::IeeeSqrtRcp => p.compute(
            Op::SqrtIeee {
                ty: T::F32,
                rnd: Rounding::Rn,
                ftz: false,
            },
            T::F32,
            &[T::F32],
        ),
        Form::MmaF16M16n8k8 => mma(&mut p, MmaShape::M16n8k8, T::F16, T::F32, 2, 1),
        Form::MmaF16M16n8k16 => mma(&mut p, MmaShape::M16n8k16, T::F16, T::F32, 4, 2),
        Form::MmaBf16 => mma(&mut p, MmaShape::M16n8k16, T::Bf16, T::F32, 4, 2),
        Form::MmaTf32 => mma(&mut p, MmaShape::M16n8k8, T::Tf32, T::F32, 4, 2),
        Form::MmaS8M16n8k32 => mma(&mut p, MmaShape::M16n8k32, T::S8, T::S32, 4, 2),
        Form::Ldmatrix => {
            let d = Operand::Vector((0..4).map(|_| Operand::Reg(p.b.reg(T::B32))).collect());
            let a = p.saddr();
            p.b.inst(
                Op::Ldmatrix {
                    count: MatrixCount::X4,
                    trans: false,
                },
                vec![d],
                vec![a],
            );
        }
        Form::Stmatrix => {
            let v = p.vals(T::B32, 4);
            let a = p.saddr();
            p.b.inst(
                Op::Stmatrix {
                    count: MatrixCount::X4,
                    trans: true,
                },
                vec![],
                vec![a, v],
            );
        }
        Form::CpAsync => {
            let (s, g) = (p.saddr(), p.gaddr());
            p.b.inst(
                Op::CpAsync {
                    cache: CacheOp::Cg,
                    bytes: 16,
                    zero_fill: false,
                },
                vec![],
                vec![s, g, Operand::Imm(Imm::Int(16))],
            );
            p.b.inst(Op::CpAsyncCommit, vec![], vec![]);
            p.b.inst(Op::CpAsyncWait, vec![], vec![Operand::Imm(Imm::Int(0))]);
        }
        Form::CpAsyncBulkTensor => {
            let coords = vec![Operand::Reg(p.val(T::S32)), Operand::Reg(p.val(T::S32))];
            let (s, bar) = (
                p.saddr(),
                Operand::Addr {
                    base: AddrBase::Reg(p.shared),
                    offset: 1024,
                },
            );
            let map = p.global;
            p.b.inst(
                Op::CpAsyncBulkTensor { dims: 2 },
                vec![],
                vec![s, Operand::TensorCoords { map, coords }, bar],
            );
        }
        Form::CpAsyncBulkTensorStore => {
            let coords = vec![Operand::Reg(p.val(T::S32)), Operand::Reg(p.val(T::S32))];
            let (s, map) = (p.saddr(), p.global);
            p.b.inst(
                Op::CpAsyncBulkTensorStore { dims: 2 },
                vec![],
                vec![Operand::TensorCoords { map, coords }, s],
            );
        }
        Form::CpAsyncBulkGroup => {
            p.b.inst(Op::CpAsyncBulkCommit, vec![], vec![]);
            p.b.inst(
                Op::CpAsyncBulkWait { read: true },
                vec![],
                vec![Operand::Imm(Imm::Int(0))],
            );
        }
        Form::CpAsyncBulkTensorMulticast => {
            let coords = vec![Operand::Reg(p.val(T::S32)), Operand::Reg(p.val(T::S32))];
            let (s, bar) = (
                p.saddr(),
                Operand::Addr {
                    base: AddrBase::Reg(p.shared),
                    offset: 1024,
                },
            );
            let mask = p.val(T::U16);
            let map = p.global;
            p.b.inst(
                Op::CpAsyncBulkTensorMulticast { dims: 2 },
                vec![],
                vec![s, Operand::TensorCoords { map, coords }, bar, mask.into()],
            );
        }
        Form::ClusterBarrier => {
            p.b.inst(Op::ClusterBarrier { wait: false }, vec![], vec![]);
            p.b.inst(Op::ClusterBarrier { wait: true }, vec![], vec![]);
        }
        Form::ClusterSpecialReg => {
            let d = p.b.reg(T::U32);
            p.b.inst(
                Op::ClusterReg,
                vec![d.into()],
                vec![Operand::Special(SpecialReg::ClusterCtaRank)],
            );
        }
        Form::Dsmem => {
            let (d, v) = (p.b.reg(T::U32), p.b.reg(T::F32));
            let rank = p.val(T::U32);
            let shared = p.shared;
            p.b.inst(Op::Mapa, vec![d.into()], vec![shared.into(), rank.into()]);
            let at = Operand::Addr {
                base: AddrBase::Reg(d),
                offset: 0,
            };
            p.b.inst(
                Op::LdCluster { ty: T::F32 },
                vec![v.into()],
                vec![at.clone()],
            );
            p.b.inst(Op::StCluster { ty: T::F32 }, vec![], vec![at, v.into()]);
        }
        Form::MbarrierArriveCluster => {
            let a = p.saddr();
            p.b.inst(
                Op::Mbarrier {
                    op: MbarrierOp::ArriveCluster,
                },
                vec![Operand::Sink],
                vec![a],
            );
        }
        Form::Mbarrier => {
            let a = p.saddr();
            p.b.inst(
                Op::Mbarrier {
                    op: MbarrierOp::Init,
                },
                vec![],
                vec![a, Operand::Imm(Imm::Int(32))],
            );
        }
        Form::MbarrierTryWait => {
            let d = p.b.reg(T::Pred);
            let a = p.saddr();
            p.b.inst(
                Op::Mbarrier {
                    op: MbarrierOp::TryWaitParity,
                },
                vec![d.into()],
                vec![a, Operand::Imm(Imm::Int(0))],
            );
        }
        Form::MbarrierExpectTx => {
            let a = p.saddr();
            p.b.inst(
                Op::Mbarrier {
                    op: MbarrierOp::ArriveExpectTx,
                },
                vec![Operand::Sink],
                vec![a, Operand::Imm(Imm::Int(1024))],
            );
        }
        Form::Wgmma => {
            p.b.inst(Op::WgmmaFence, vec![], vec![]);
            p.b.inst(Op::WgmmaCommit, vec![], vec![]);
            p.b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(0))]);
        }
        Form::Setmaxnreg => {
            p.b.perf_mut().maxntid = Some([128, 1, 1]);
            p.b.perf_mut().minnctapersm = Some(1);
            p.b.inst(
                Op::Setmaxnreg {
                    increase: true,
                    count: 232,
                },
                vec![],
                vec![Operand::Imm(Imm::Int(232))],
            );
        }
        Form::GridDepControl => p.b.inst(
            Op::GridDep {
                kind: GridDepControl::Wait,
            },
            vec![],
            vec![],
        ),
        Form::Nanosleep => {
            p.b.inst(Op::Nanosleep, vec![], vec![Operand::Imm(Imm::Int(100))])
        }
        Form::LoadNoL1 => {
            let v = Operand::Vector((0..4).map(|_| Operand::Reg(p.b.reg(T::U32))).collect());
            let a = p.gaddr();
            p.b.inst(
                Op::Ld {
                    space: StateSpace::Global,
                    ty: T::U32,
                    vec: Some(VecWidth::V4),
                    nc: true,
                    cache: Some(CacheOp::NoL1),
                },
                vec![v],
                vec![a],
            );
        }
        Form::PrefetchL2 => {
            let a = p.gaddr();
            p.b.inst(Op::PrefetchL2, vec![], vec![a]);
        }
        Form::ControlFlow => p.b.inst(Op::Exit, vec![], vec![]),
    }
    p.finish()
}

fn atom(p: &mut Probe, op: AtomOp, ty: T, returns: bool) {
    let v = p.val(ty);
    let a = p.gaddr();
    if returns {
        let d = p.b.reg(ty);
        p.b.inst(
            Op::Atom {
                space: StateSpace::Global,
                op,
                ty,
            },
            vec![d.into()],
            vec![a, v.into()],
        );
    } else {
        p.b.inst(
            Op::Red {
                space: StateSpace::Global,
                op,
                ty,
            },
            vec![],
            vec![a, v.into()],
        );
    }
}

fn mma(p: &mut Probe, shape: MmaShape, ab: T, acc: T, a_regs: usize, b_regs: usize) {
    let d = Operand::Vector((0..4).map(|_| Operand::Reg(p.b.reg(acc))).collect());
    let (a, b, c) = (
        p.vals(T::B32, a_regs),
        p.vals(T::B32, b_regs),
        p.vals(acc, 4),
    );
    p.b.inst(
        Op::Mma {
            shape,
            d: acc,
            a: ab,
            b: ab,
            c: acc,
        },
        vec![d],
        vec![a, b, c],
    );
}

/// The module retargeted to `lower`, with a `.version` that target accepts.
fn retarget(ptx: &str, lower: Target) -> String {
    ptx.lines()
        .map(|l| {
            if l.starts_with(".target") {
                format!(".target {lower}")
            } else if let Some(v) = l.strip_prefix(".version ") {
                let v: kernel_dsl::IsaVersion = v.parse().unwrap();
                format!(".version {}", v.max(lower.min_isa()))
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn every_catalog_row_is_tight_against_ptxas() {
    let ptxas = Ptxas::find()
        .expect("ptxas not found: run `bash scripts/install-ptxas.sh` or set PTXKIT_PTXAS");
    let mut problems = Vec::new();
    for entry in CATALOG {
        let kernel = probe(entry.form);
        let req = entry.requirement;
        let lowest = Target::ALL
            .into_iter()
            .find(|&t| req.admits(t))
            .expect("every row admits some target");
        let ptx = match emit::emit(&kernel, lowest) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("{:?}: emit for {lowest} failed: {e}", entry.form));
                continue;
            }
        };
        // The probe's instruction is the form under test.
        assert!(
            kernel_has_form(&kernel, entry.form),
            "{:?}: the probe does not use the form",
            entry.form
        );
        if let Err(e) = ptxas.assemble(&ptx) {
            problems.push(format!(
                "{:?}: claims {req} but ptxas rejects it on {lowest}: {e}",
                entry.form
            ));
        }
        // One step below: the previous target in the table that the row refuses.
        let below = Target::ALL
            .into_iter()
            .rev()
            .find(|&t| t < lowest && !req.admits(t));
        if let Some(below) = below {
            let mut elided = Vec::new();
            kernel.for_each_inst(&mut |i| {
                if kernel_dsl::catalog::elided(&i.op, below) {
                    elided.push(i.op.mnemonic());
                }
            });
            if elided.is_empty() {
                assert!(
                    emit::emit(&kernel, below).is_err(),
                    "{:?}: emitter accepted {below}",
                    entry.form
                );
            } else {
                // Left out below its minimum rather than refused.
                let lower = emit::emit(&kernel, below).unwrap();
                for m in &elided {
                    assert!(
                        !lower.contains(m.as_str()),
                        "{:?}: {m} on {below}",
                        entry.form
                    );
                }
            }
            if ptxas.assemble(&retarget(&ptx, below)).is_ok() {
                problems.push(format!(
                    "{:?}: claims {req} but ptxas accepts it on {below}",
                    entry.form
                ));
            }
        }
        // The ISA version just below the row's minimum fails on the same target, where the
        // target itself accepts that older version.
        let older = previous_isa(req.min_isa);
        if older >= lowest.min_isa() {
            let text = ptx.replace(
                &format!(".version {}", req.min_isa.max(lowest.min_isa())),
                &format!(".version {older}"),
            );
            if ptxas.assemble(&text).is_ok() {
                problems.push(format!(
                    "{:?}: claims PTX ISA {} but ptxas accepts {older} on {lowest}",
                    entry.form, req.min_isa
                ));
            }
        }
        // Arch-specific forms must also fail beyond their last SM.
        if let Some(max) = req.max_sm {
            if let Some(beyond) = Target::ALL
                .into_iter()
                .find(|t| t.sm() > max && t.is_arch_specific())
            {
                if ptxas.assemble(&retarget(&ptx, beyond)).is_ok() {
                    problems.push(format!(
                        "{:?}: claims at most sm_{max} but ptxas accepts {beyond}",
                        entry.form
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "catalog facts disagree with ptxas:\n{}",
        problems.join("\n")
    );
}

/// The PTX ISA version released before `v` (minors run to 5 in 6.x and to 8 in 7.x).
fn previous_isa(v: kernel_dsl::IsaVersion) -> kernel_dsl::IsaVersion {
    match v {
        kernel_dsl::IsaVersion(major, 0) => {
            kernel_dsl::IsaVersion(major - 1, if major == 7 { 5 } else { 8 })
        }
        kernel_dsl::IsaVersion(major, minor) => kernel_dsl::IsaVersion(major, minor - 1),
    }
}

fn kernel_has_form(k: &Kernel, form: Form) -> bool {
    let mut found = false;
    k.for_each_inst(&mut |i| found |= catalog::form(&i.op) == form);
    found
}

#[test]
fn dynamic_shared_memory_and_performance_directives_assemble() {
    use kernel_dsl::scalar::{F32, U32};
    let ptxas = Ptxas::find()
        .expect("ptxas not found: run `bash scripts/install-ptxas.sh` or set PTXKIT_PTXAS");
    let mut b = KernelBuilder::new("dyn_copy");
    let x = b.param_slice::<F32>("x");
    let y = b.param_slice_mut::<F32>("y");
    let smem = b.dynamic_shared::<F32>("dyn_smem");
    {
        let p = b.perf_mut();
        p.maxntid = Some([256, 1, 1]);
        p.maxnreg = Some(64);
        p.minnctapersm = Some(2);
    }
    let i = b.global_index(kernel_dsl::ir::Dim::X);
    let t = b.tid(kernel_dsl::ir::Dim::X);
    let v = b.ld_global(&x, i);
    b.st_shared(&smem, t, v);
    b.bar_sync();
    let w = b.ld_shared(&smem, t);
    b.st_global(&y, i, w);
    let k = b.finish();
    assert_eq!(
        k.perf.block_contract(),
        kernel_dsl::BlockContract::AtMost(256)
    );
    let ptx = emit::emit(&k, Target::Sm89).unwrap();
    for line in [
        ".extern .shared .align 16 .b8 dyn_smem[];",
        ".maxntid 256, 1, 1",
        ".maxnreg 64",
        ".minnctapersm 2",
    ] {
        assert!(ptx.contains(line), "missing `{line}` in\n{ptx}");
    }
    let out = ptxas.assemble(&ptx).unwrap();
    assert!(out.reports[0].registers <= 64);
    let _ = U32;
}

#[test]
fn a_cluster_shape_assembles_on_sm90_and_is_refused_below() {
    let ptxas = Ptxas::find()
        .expect("ptxas not found: run `bash scripts/install-ptxas.sh` or set PTXKIT_PTXAS");
    let mut p = Probe::new();
    p.b.perf_mut().reqnctapercluster = Some([2, 1, 1]);
    p.b.inst(Op::ClusterBarrier { wait: false }, vec![], vec![]);
    p.b.inst(Op::ClusterBarrier { wait: true }, vec![], vec![]);
    let k = p.finish();
    let ptx = emit::emit(&k, Target::Sm90).unwrap();
    assert!(ptx.contains(".reqnctapercluster 2, 1, 1"), "{ptx}");
    ptxas.assemble(&ptx).unwrap();
    ptxas.assemble(&retarget(&ptx, Target::Sm90a)).unwrap();
    // The directive alone is refused below sm_90, by the emitter and by ptxas.
    let mut q = Probe::new();
    q.b.perf_mut().reqnctapercluster = Some([2, 1, 1]);
    let k = q.finish();
    let err = emit::emit(&k, Target::Sm89).unwrap_err().to_string();
    assert!(
        err.contains(".reqnctapercluster") && err.contains("sm_90"),
        "{err}"
    );
    let ptx = emit::emit(&k, Target::Sm90).unwrap();
    assert!(ptxas.assemble(&retarget(&ptx, Target::Sm89)).is_err());
}
