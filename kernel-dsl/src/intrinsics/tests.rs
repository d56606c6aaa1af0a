use super::*;
use crate::catalog::{entry, form};
use crate::target::Target;

#[test]
fn every_intrinsic_instruction_has_a_catalog_row() {
    for i in INTRINSICS {
        for op in i.ops() {
            // `entry` panics on a form without a row; the row must be the op's own.
            assert_eq!(entry(form(op)).form, form(op), "{}: {op:?}", i.name);
        }
    }
}

#[test]
fn names_are_unique_per_receiver_type() {
    let mut seen = std::collections::BTreeSet::new();
    for (k, i) in INTRINSICS.iter().enumerate() {
        let receiver = i.params.first().map(|p| format!("{:?}", p.ty));
        assert!(seen.insert((i.name, receiver)), "`{}` listed twice", i.name);
        if INTRINSICS.iter().position(|j| j.name == i.name) != Some(k) {
            // A later row of a name is a method on another type, over the same instructions.
            assert!(i.method, "`{}`: a second row must be a method", i.name);
        }
    }
}

#[test]
fn a_method_finds_the_row_of_its_receiver_type() {
    let f64_sqrt = find_for("sqrt", ScalarType::F64).expect("sqrt on f64");
    assert_eq!(
        f64_sqrt.ops().iter().map(Op::mnemonic).collect::<Vec<_>>(),
        ["sqrt.rn.f64"]
    );
    let mnemonic = |ty| find_for("sqrt", ty).expect("sqrt").ops()[0].mnemonic();
    assert_eq!(mnemonic(ScalarType::F32), "sqrt.rn.f32");
    // A type with no row of its own gets the first one, whose lowering reports the mismatch.
    assert_eq!(mnemonic(ScalarType::U32), "sqrt.rn.f32");
}

#[test]
fn chain_rows_are_scalar_in_scalar_out() {
    for i in INTRINSICS {
        let Lowering::Chain(ops) = i.lowering else {
            // kernel-macros lowers method syntax through the chain path only.
            assert!(!i.method, "{} is a method but not a chain", i.name);
            continue;
        };
        assert!(!ops.is_empty(), "{}", i.name);
        assert!(
            i.params.iter().all(|p| matches!(p.ty, Ty::Scalar(_))),
            "{} takes a non-scalar",
            i.name
        );
        match i.result {
            Ty::Scalar(_) => {}
            // A `()` result has no register to chain through.
            Ty::Unit => assert_eq!(ops.len(), 1, "{}", i.name),
            other => panic!("{} returns {other:?}", i.name),
        }
        if i.method {
            assert!(!i.params.is_empty(), "{} has no receiver", i.name);
        }
    }
}

fn mnemonics(name: &str) -> Vec<String> {
    find(name)
        .unwrap_or_else(|| panic!("no intrinsic `{name}`"))
        .ops()
        .iter()
        .map(Op::mnemonic)
        .collect()
}

#[test]
fn the_new_intrinsics_print_the_instructions_they_promise() {
    assert_eq!(mnemonics("ex2_approx_ftz"), ["ex2.approx.ftz.f32"]);
    assert_eq!(mnemonics("sqrt_rn"), ["sqrt.rn.f32"]);
    assert_eq!(mnemonics("rcp_rn"), ["rcp.rn.f32"]);
    assert_eq!(mnemonics("rsqrt"), ["rsqrt.approx.f32"]);
    assert_eq!(mnemonics("rsqrt_rn"), ["sqrt.rn.f32", "rcp.rn.f32"]);
    assert_eq!(mnemonics("round_ties_even"), ["cvt.rni.f32.f32"]);
    assert_eq!(mnemonics("brev"), ["brev.b32"]);
    assert_eq!(mnemonics("clz"), ["clz.b32"]);
    assert_eq!(mnemonics("dp4a_s8"), ["dp4a.s32.s32"]);
    assert_eq!(mnemonics("dp4a_u8_s8"), ["dp4a.u32.s32"]);
    assert_eq!(mnemonics("dp4a_u8"), ["dp4a.u32.u32"]);
    assert_eq!(mnemonics("prmt"), ["prmt.b32"]);
    assert_eq!(mnemonics("fence_cta"), ["fence.acq_rel.cta"]);
    assert_eq!(mnemonics("fence_gpu"), ["fence.acq_rel.gpu"]);
    assert_eq!(mnemonics("fence_sys"), ["fence.acq_rel.sys"]);
    assert_eq!(mnemonics("nanosleep"), ["nanosleep.u32"]);
    assert_eq!(mnemonics("sync_warp"), ["bar.warp.sync"]);
    assert_eq!(mnemonics("sync_threads_or"), ["bar.red.or.pred"]);
    assert_eq!(mnemonics("sync_threads_and"), ["bar.red.and.pred"]);
    assert_eq!(mnemonics("sync_threads_count"), ["bar.red.popc.u32"]);
    assert_eq!(mnemonics("cvt_tf32"), ["cvt.rna.tf32.f32"]);
    assert_eq!(
        mnemonics("mma_m16n8k8_tf32"),
        ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"]
    );
}

#[test]
fn requirements_come_from_the_catalog() {
    let req = |n: &str| find(n).and_then(|i| i.requirement()).expect(n);
    assert_eq!(req("fence_gpu").min_sm, 70);
    assert_eq!(req("nanosleep").min_sm, 70);
    assert_eq!(req("nanosleep").to_string(), "sm_70 or newer (PTX ISA 6.2)");
    assert_eq!(req("tanh").min_sm, 75);
    for n in [
        "cvt_tf32",
        "mma_m16n8k8_tf32",
        "mma_m16n8k16_bf16",
        "mma_m16n8k32_s8",
        "mma_m16n8k32_u8_s8",
    ] {
        assert!(!req(n).admits(Target::Sm75), "{n}");
        assert!(req(n).admits(Target::Sm80), "{n}");
    }
    for n in ["sync_threads_or", "sync_threads_and", "sync_threads_count"] {
        assert_eq!(req(n).to_string(), "sm_70 or newer (PTX ISA 6.0)", "{n}");
        let row = find(n).unwrap();
        let [op @ Op::BarRed { op: red }] = row.ops() else {
            panic!("{n} is one `bar.red`")
        };
        // A block-wide barrier, held to `bar.sync`'s uniformity rule.
        assert!(op.is_cta_barrier(), "{n}");
        assert_eq!(row.result, Ty::Scalar(red.result()), "{n}");
    }
    assert!(find("shared_array").unwrap().requirement().is_none());
}
