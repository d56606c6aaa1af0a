//! The target-parity contract as the emitter enforces it.

use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::ir::Dim;
use kernel_dsl::op::ReduxOp;
use kernel_dsl::scalar::{F32, U32};
use kernel_dsl::{check_ptx_parity, emit, read_ptx_header, samples, Error, IsaVersion, Target};

#[test]
fn the_mma_sample_is_refused_below_sm80_naming_instruction_minimum_and_target() {
    let err = emit::emit(&samples::mma_bf16_16x8x16(), Target::Sm75).unwrap_err();
    let Error::BeyondTarget {
        instruction,
        need,
        target,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        instruction,
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    );
    assert_eq!(need, "sm_80 or newer (PTX ISA 7.0)");
    assert_eq!(*target, Target::Sm75);
    assert_eq!(
        err.to_string(),
        "`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` needs sm_80 or newer (PTX ISA 7.0), but the module is emitted for sm_75\n  help: remove the `sm_75` feature, or give this kernel a fallback for targets below sm_80"
    );
}

#[test]
fn an_sm80_only_instruction_asked_for_sm75_is_refused() {
    let mut b = KernelBuilder::new("warp_total");
    let out = b.param_slice_mut::<U32>("out");
    let lane = b.lane_id();
    let total = b.redux(ReduxOp::Add, lane);
    let i = b.tid(Dim::X);
    b.st_global(&out, i, total);
    let k = b.finish();
    let msg = emit::emit(&k, Target::Sm75).unwrap_err().to_string();
    assert!(msg.starts_with("`redux.sync.add.u32` needs sm_80 or newer (PTX ISA 7.0), but the module is emitted for sm_75"), "{msg}");
    assert!(emit::emit(&k, Target::Sm80).is_ok());
}

#[test]
fn the_wgmma_sample_is_refused_on_plain_targets_and_emitted_for_sm90a() {
    for t in [Target::Sm80, Target::Sm90, Target::Sm100a, Target::Sm121] {
        assert!(
            emit::emit(&samples::wgmma_bf16_64x8x16(), t).is_err(),
            "{t}"
        );
    }
    let msg = emit::emit(&samples::wgmma_bf16_64x8x16(), Target::Sm90)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("needs sm_90a (PTX ISA 8.0)") && msg.contains("enable the `sm_90a` feature"),
        "{msg}"
    );
    let ptx = emit::emit(&samples::wgmma_bf16_64x8x16(), Target::Sm90a).unwrap();
    let h = read_ptx_header(&ptx).unwrap();
    assert_eq!((h.target, h.version), (Target::Sm90a, IsaVersion(8, 0)));
}

#[test]
fn version_is_the_larger_of_the_targets_minimum_and_the_instructions_minimum() {
    // sm_80 needs ISA 7.0; the block reduction needs nothing newer.
    let h =
        read_ptx_header(&emit::emit(&samples::block_reduce_sum(), Target::Sm80).unwrap()).unwrap();
    assert_eq!(h.version, IsaVersion(7, 0));
    // Same kernel for sm_121: the target's 8.8 wins.
    let h =
        read_ptx_header(&emit::emit(&samples::block_reduce_sum(), Target::Sm121).unwrap()).unwrap();
    assert_eq!(h.version, IsaVersion(8, 8));
    // sm_70 with an instruction that needs ISA 6.3 gets 6.3.
    let mut b = KernelBuilder::new("cas16");
    let out = b.param_slice_mut::<kernel_dsl::scalar::U16>("out");
    let zero = b.const_u32(0);
    let addr = b.element_address(&out, zero);
    let d = b.reg(kernel_dsl::ScalarType::B16);
    let v = b.reg(kernel_dsl::ScalarType::B16);
    b.inst(
        kernel_dsl::op::Op::Mov {
            ty: kernel_dsl::ScalarType::B16,
        },
        vec![v.into()],
        vec![kernel_dsl::ir::Operand::Imm(kernel_dsl::ir::Imm::Int(1))],
    );
    b.inst(
        kernel_dsl::op::Op::Atom {
            space: kernel_dsl::StateSpace::Global,
            op: kernel_dsl::op::AtomOp::Cas,
            ty: kernel_dsl::ScalarType::B16,
        },
        vec![d.into()],
        vec![
            kernel_dsl::ir::Operand::Addr {
                base: kernel_dsl::ir::AddrBase::Reg(addr.reg()),
                offset: 0,
            },
            v.into(),
            v.into(),
        ],
    );
    let h = read_ptx_header(&emit::emit(&b.finish(), Target::Sm70).unwrap()).unwrap();
    assert_eq!(h.version, IsaVersion(6, 3));
}

#[test]
fn emitting_the_same_ir_twice_gives_identical_bytes() {
    for s in samples::all() {
        for t in s.targets_in(&Target::ALL) {
            let a = emit::emit(&s.kernel, t).unwrap();
            let b = emit::emit(&s.kernel.clone(), t).unwrap();
            assert_eq!(a, b, "{}@{t}", s.kernel.name);
            let rebuilt = emit::emit(&all_by_name(&s.kernel.name), t).unwrap();
            assert_eq!(a, rebuilt, "rebuilding {} changed its PTX", s.kernel.name);
        }
    }
}

fn all_by_name(name: &str) -> kernel_dsl::ir::Kernel {
    samples::all()
        .into_iter()
        .find(|s| s.kernel.name == name)
        .unwrap()
        .kernel
}

#[test]
fn ir_survives_json_and_emits_the_same_ptx() {
    for s in samples::all() {
        let back = kernel_dsl::ir::Kernel::from_json(&s.kernel.to_json()).unwrap();
        assert_eq!(back, s.kernel);
        assert_eq!(
            emit::emit(&back, s.min_target).unwrap(),
            emit::emit(&s.kernel, s.min_target).unwrap()
        );
    }
    assert!(kernel_dsl::ir::Kernel::from_json("{").is_err());
}

#[test]
fn emitted_modules_pass_the_parity_check_only_for_their_own_target() {
    let ptx = emit::emit(&samples::saxpy(), Target::Sm89).unwrap();
    check_ptx_parity(&ptx, Target::Sm89).unwrap();
    let err = check_ptx_parity(&ptx, Target::Sm90).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this PTX module is for sm_89, but the device runs sm_90: load the module emitted for sm_90 (enable the `sm_90` feature) instead"
    );
}

#[test]
fn labels_are_unique_within_a_module() {
    for s in samples::all() {
        let ptx = emit::emit(&s.kernel, s.min_target).unwrap();
        let labels: Vec<&str> = ptx.lines().filter(|l| l.starts_with("$L__")).collect();
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(labels.len(), unique.len(), "{}", s.kernel.name);
    }
    let _ = F32;
}
