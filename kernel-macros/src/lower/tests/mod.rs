//! Type-checking and lowering, one behaviour per test.

use super::{lower_kernel, Devices, Lowered, Specialization};
use crate::diag::Diag;
use kernel_dsl::ir::Stmt;
use kernel_dsl::op::Op;
use kernel_dsl::{emit, ScalarType, Target};

fn lower(f: syn::ItemFn) -> Result<Lowered, Diag> {
    let name = f.sig.ident.to_string();
    lower_kernel(&f, &name, &Specialization::default(), None, &Devices::new())
}

fn lower_ok(f: syn::ItemFn) -> Lowered {
    match lower(f) {
        Ok(l) => l,
        Err(d) => panic!("unexpected error: {}", d.message),
    }
}

fn error_of(f: syn::ItemFn) -> String {
    match lower(f) {
        Ok(_) => panic!("the kernel lowered, but an error was expected"),
        Err(d) => d.message,
    }
}

fn ops(l: &Lowered) -> Vec<Op> {
    let mut v = Vec::new();
    l.kernel.for_each_inst(&mut |i| v.push(i.op));
    v
}

#[test]
fn a_literal_let_takes_the_type_of_its_first_typed_use() {
    let l = lower_ok(syn::parse_quote! {
        fn count(y: &mut [u32], n: u32) {
            let mut i = 0;
            while i < n {
                i += 1;
            }
            y[0] = i;
        }
    });
    assert!(ops(&l).iter().any(|o| matches!(
        o,
        Op::Setp {
            ty: ScalarType::U32,
            ..
        }
    )));
    assert!(
        !l.kernel.regs.contains(&ScalarType::S32),
        "no register stayed i32"
    );
}

#[test]
fn float_literals_without_other_information_are_f32() {
    let l = lower_ok(syn::parse_quote! {
        fn fill(y: &mut [f32]) {
            let mut acc = 0.0;
            acc += 1.5;
            y[0] = acc;
        }
    });
    assert!(ops(&l).iter().any(|o| matches!(
        o,
        Op::Add {
            ty: ScalarType::F32,
            ..
        }
    )));
}

#[test]
fn mixing_types_without_a_cast_names_the_cast_to_add() {
    let msg = error_of(syn::parse_quote! {
        fn bad(x: &[f32], y: &mut [f32], n: u32) {
            let i = thread_idx().x;
            y[i] = x[i] + n;
        }
    });
    assert!(msg.contains("add `as f32`"), "{msg}");
}

#[test]
fn an_explicit_cast_converts_with_rust_semantics() {
    let l = lower_ok(syn::parse_quote! {
        fn ok(x: &[f32], y: &mut [i32], n: u32) {
            let i = thread_idx().x;
            y[i] = (x[i] + n as f32) as i32;
        }
    });
    let cvts: Vec<_> = ops(&l)
        .into_iter()
        .filter(|o| matches!(o, Op::Cvt { .. }))
        .collect();
    assert!(cvts.iter().any(|o| matches!(
        o,
        Op::Cvt {
            dst: ScalarType::F32,
            src: ScalarType::U32,
            ..
        }
    )));
    assert!(cvts.iter().any(|o| matches!(
        o,
        Op::Cvt {
            dst: ScalarType::S32,
            src: ScalarType::F32,
            rnd: Some(kernel_dsl::op::CvtRounding::Rzi),
            ..
        }
    )));
}

#[test]
fn read_only_slices_load_through_the_non_coherent_path_and_mutable_ones_do_not() {
    let l = lower_ok(syn::parse_quote! {
        fn copy(x: &[f32], y: &mut [f32]) {
            let i = thread_idx().x;
            y[i] = x[i] + y[i];
        }
    });
    let loads: Vec<bool> = ops(&l)
        .into_iter()
        .filter_map(|o| {
            if let Op::Ld {
                space: kernel_dsl::StateSpace::Global,
                nc,
                ..
            } = o
            {
                Some(nc)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(loads, vec![true, false]);
}

#[test]
fn constant_bound_loops_over_local_arrays_unroll_into_registers() {
    let l = lower_ok(syn::parse_quote! {
        fn acc4(x: &[f32], y: &mut [f32]) {
            let mut acc = [0.0f32; 4];
            for k in 0..4 {
                acc[k] += x[k];
            }
            y[0] = acc[0] + acc[3];
        }
    });
    fn has_loop(s: &[Stmt]) -> bool {
        s.iter().any(|s| matches!(s, Stmt::Loop { .. }))
    }
    assert!(!has_loop(&l.kernel.body), "the loop was unrolled");
    assert!(!ops(&l).iter().any(|o| matches!(
        o,
        Op::Ld {
            space: kernel_dsl::StateSpace::Local,
            ..
        }
    )));
}

#[test]
fn constant_bound_loops_that_hand_an_array_to_wgmma_unroll() {
    let l = lower_ok(syn::parse_quote! {
        fn steps(c: &mut [f32], a: u64, b: u64) {
            let mut acc = [0.0f32; 4];
            for k in 0..4 {
                wgmma_bf16(&mut acc, a + k as u64, b, k > 0, false, false);
            }
            c[0] = acc[0];
        }
    });
    assert!(
        !l.kernel.body.iter().any(|s| matches!(s, Stmt::Loop { .. })),
        "the loop was unrolled"
    );
    let n = ops(&l)
        .iter()
        .filter(|o| matches!(o, Op::Wgmma { .. }))
        .count();
    assert_eq!(n, 4);
}

#[test]
fn short_circuit_guards_a_load_behind_the_bounds_test() {
    let l = lower_ok(syn::parse_quote! {
        fn pos(x: &[f32], y: &mut [u32], n: u32) {
            let i = thread_idx().x;
            if i < n && x[i] > 0.0 {
                y[i] = 1;
            }
        }
    });
    // The load sits inside an `if`, not at the top level.
    let top_level_load = l.kernel.body.iter().any(|s| matches!(s, Stmt::Inst(i) if matches!(i.op, Op::Ld { space: kernel_dsl::StateSpace::Global, .. })));
    assert!(!top_level_load);
}

#[test]
fn bf16_widens_by_shifting_bits_so_sm80_can_emit_it() {
    let l = lower_ok(syn::parse_quote! {
        fn widen(x: &[bf16], y: &mut [f32]) {
            let i = thread_idx().x;
            y[i] = x[i] as f32;
        }
    });
    assert!(!ops(&l).iter().any(|o| matches!(
        o,
        Op::Cvt {
            src: ScalarType::Bf16,
            ..
        }
    )));
    emit::emit(&l.kernel, Target::Sm80).expect("bf16 loads and widening run on sm_80");
}

#[test]
fn an_instruction_above_a_target_is_an_error_for_that_target_only() {
    let l = lower_ok(syn::parse_quote! {
        fn act(x: &[f32], y: &mut [f32]) {
            let i = thread_idx().x;
            y[i] = x[i].tanh();
        }
    });
    let emitted = crate::targets::emit_all(
        &l,
        proc_macro2::Span::call_site().into(),
        None,
        crate::line_info::Mode::current(),
    );
    for e in &emitted {
        match (e.target, &e.ptx) {
            (Target::Sm70, Err(d)) => assert!(
                d.message.contains("tanh.approx.f32") && d.message.contains("sm_75"),
                "{}",
                d.message
            ),
            (Target::Sm70, Ok(_)) => panic!("tanh emitted for sm_70"),
            (t, Err(d)) => panic!("{t}: {}", d.message),
            (_, Ok(ptx)) => assert!(ptx.contains("tanh.approx.f32")),
        }
    }
}

#[test]
fn lowering_the_same_source_twice_gives_the_same_ptx() {
    let f: syn::ItemFn = syn::parse_quote! {
        fn k(x: &[f32], y: &mut [f32], n: u32) {
            let tile = shared_array::<f32, 64>();
            let i = thread_idx().x;
            if i < 64 { tile[i] = x[i]; }
            sync_threads();
            let mut s = 0.0;
            for j in 0..n { s += tile[j % 64]; }
            y[i] = s;
        }
    };
    let a = emit::emit(&lower_ok(f.clone()).kernel, Target::Sm89).unwrap();
    let b = emit::emit(&lower_ok(f).kernel, Target::Sm89).unwrap();
    assert_eq!(a, b);
}

#[test]
fn const_generics_specialize_sizes_and_entry_names() {
    let f: syn::ItemFn = syn::parse_quote! {
        fn scale<T: Element, const BLOCK: u32>(x: &[T], y: &mut [T], n: u32) {
            let buf = shared_array::<T, BLOCK>();
            let i = thread_idx().x;
            buf[i] = x[i];
            y[i] = buf[BLOCK - 1 - i];
        }
    };
    let attr =
        crate::attr::parse(quote::quote!(instances(<f32, 128>, <u32, 64>), block = BLOCK)).unwrap();
    let inst = crate::instance::resolve(&f, &attr.instances).unwrap();
    assert_eq!(
        inst.iter().map(|r| r.entry.as_str()).collect::<Vec<_>>(),
        ["scale__f32_128", "scale__u32_64"]
    );
    let l = lower_kernel(
        &f,
        &inst[1].entry,
        &inst[1].spec,
        Some([64, 1, 1]),
        &Devices::new(),
    )
    .unwrap();
    assert_eq!(l.kernel.shared[0].bytes(), 64 * 4);
    assert_eq!(l.kernel.perf.reqntid, Some([64, 1, 1]));
    assert!(matches!(
        l.kernel.params[0].ty,
        kernel_dsl::ir::ParamType::GlobalPtr {
            elem: ScalarType::U32,
            mutable: false
        }
    ));
}

#[test]
fn half_precision_literals_round_to_nearest_even() {
    assert_eq!(super::f32_to_f16_bits(1.0), 0x3c00);
    assert_eq!(super::f32_to_f16_bits(-2.5), 0xc100);
    assert_eq!(super::f32_to_f16_bits(65504.0), 0x7bff);
    assert_eq!(super::f32_to_f16_bits(1.0e6), 0x7c00);
    assert_eq!(super::f32_to_bf16_bits(1.0), 0x3f80);
    assert_eq!(super::f32_to_bf16_bits(3.140625), 0x4049);
}

#[test]
fn barriers_under_thread_dependent_branches_are_rejected_by_the_verifier() {
    let l = lower_ok(syn::parse_quote! {
        fn bad(y: &mut [f32]) {
            if thread_idx().x < 16 {
                sync_threads();
            }
            y[0] = 1.0;
        }
    });
    let emitted = crate::targets::emit_all(
        &l,
        proc_macro2::Span::call_site().into(),
        None,
        crate::line_info::Mode::current(),
    );
    assert!(
        emitted.iter().all(|e| e
            .ptx
            .as_ref()
            .is_err_and(|d| d.message.contains("bar.sync") || d.message.contains("uniform"))),
        "{:?}",
        emitted
            .iter()
            .map(|e| e.ptx.as_ref().err().map(|d| d.message.clone()))
            .collect::<Vec<_>>()
    );
}

/// The work loop of the README: `more` from `sync_threads_or` bounds a loop with barriers;
/// `more` from the shared-memory read itself does not.
fn ticket_loop(block_wide: bool) -> Vec<Result<String, String>> {
    let next: syn::Expr = if block_wide {
        syn::parse_quote!(sync_threads_or(ticket < chunks))
    } else {
        syn::parse_quote!(ticket < chunks)
    };
    let l = lower_ok(syn::parse_quote! {
        fn by_chunks(x: &mut [f32], counter: &mut [u32], chunks: u32) {
            let ticket_of = shared_array::<u32, 1>();
            let mut more = true;
            while more {
                if thread_idx().x == 0 {
                    ticket_of[0] = counter.atomic_add(0, 1u32);
                }
                sync_threads();
                let ticket = ticket_of[0];
                more = #next;
                if ticket < chunks {
                    x[ticket * block_dim().x + thread_idx().x] = 1.0;
                }
            }
        }
    });
    crate::targets::emit_all(
        &l,
        proc_macro2::Span::call_site().into(),
        None,
        crate::line_info::Mode::current(),
    )
    .into_iter()
    .map(|e| e.ptx.map_err(|d| d.message))
    .collect()
}

#[test]
fn a_loop_ended_by_sync_threads_or_may_hold_barriers() {
    for ptx in ticket_loop(true) {
        let ptx = ptx.unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains("bar.red.or.pred"), "{ptx}");
    }
    for ptx in ticket_loop(false) {
        let e = ptx.expect_err("a loop ended by a shared-memory read");
        assert!(
            e.contains("`bar.sync` is under control flow that differs"),
            "{e}"
        );
    }
}

#[test]
fn device_helpers_take_arrays_by_value_and_may_return_them() {
    let helper: syn::ItemFn = syn::parse_quote! {
        fn doubled(mut v: [f32; 2]) -> [f32; 2] {
            v[0] = v[0] * 2.0;
            v[1] = v[1] * 2.0;
            v
        }
    };
    let mut devices = Devices::new();
    devices.insert("doubled".into(), helper);
    let f: syn::ItemFn = syn::parse_quote! {
        fn k(x: &[f32], y: &mut [f32]) {
            let a = [x[0], x[1]];
            let b = doubled(a);
            y[0] = a[0] + b[0];
            y[1] = a[1] + b[1];
        }
    };
    let l = lower_kernel(&f, "k", &Specialization::default(), None, &devices).unwrap();
    // The helper's writes go to its own copy: `a` is read from registers the helper never
    // writes, so the stores add two different registers.
    let adds: Vec<_> = {
        let mut v = Vec::new();
        l.kernel.for_each_inst(&mut |i| {
            if matches!(
                i.op,
                Op::Add {
                    ty: ScalarType::F32,
                    ..
                }
            ) {
                v.push(i.srcs.clone());
            }
        });
        v
    };
    assert_eq!(adds.len(), 2);
    assert!(adds.iter().all(|s| s[0] != s[1]));
    emit::emit(&l.kernel, Target::Sm80).unwrap();
}

mod constants;
mod narrowing;
mod selection;
mod strength;
