//! Conditions known at build time fold, and the branch not taken is never lowered.

use super::{lower_kernel, ops, Devices, Lowered};
use crate::diag::Diag;
use kernel_dsl::op::Op;

/// Lowers the single instance `<args>` of a generic kernel.
fn lower_instance(f: syn::ItemFn, args: proc_macro2::TokenStream) -> Result<Lowered, Diag> {
    let attr = crate::attr::parse(quote::quote!(instances(<#args>))).unwrap();
    let inst = crate::instance::resolve(&f, &attr.instances).unwrap();
    lower_kernel(&f, &inst[0].entry, &inst[0].spec, None, &Devices::new())
}

fn barriers(l: &Lowered) -> usize {
    ops(l).iter().filter(|o| matches!(o, Op::BarSync)).count()
}

fn setps(l: &Lowered) -> usize {
    ops(l)
        .iter()
        .filter(|o| matches!(o, Op::Setp { .. }))
        .count()
}

fn per_row_kernel() -> syn::ItemFn {
    syn::parse_quote! {
        fn rows<const CTA: u32, const BLOCK: u32>(y: &mut [f32]) {
            let t = thread_idx().x;
            if CTA == 1 && BLOCK >= 64 {
                sync_threads();
            }
            if !(CTA != 0) || BLOCK < 32 {
                y[t] = 1.0;
            } else {
                y[t] = 2.0;
            }
        }
    }
}

#[test]
fn a_const_generic_comparison_keeps_only_the_branch_taken() {
    let off = lower_instance(per_row_kernel(), quote::quote!(0, 256)).unwrap();
    assert_eq!(barriers(&off), 0, "CTA = 0 emits no barrier");
    assert_eq!(setps(&off), 0, "every condition folded");
    let on = lower_instance(per_row_kernel(), quote::quote!(1, 256)).unwrap();
    assert_eq!(barriers(&on), 1, "CTA = 1 keeps the barrier");
    assert_eq!(setps(&on), 0);
}

#[test]
fn every_comparison_operator_folds_with_the_types_own_order() {
    // u32::MAX is the largest u32, not -1; i32 keeps its sign.
    let f: syn::ItemFn = syn::parse_quote! {
        fn cmp<const N: u32, const S: i32>(y: &mut [u32]) {
            let a: u32 = if N > 1 { 1 } else { 100 };
            let b: u32 = if u32::MAX > N { 2 } else { 200 };
            let c: u32 = if S < 0 && N <= 7 && N >= 7 && N != 8 { 4 } else { 400 };
            let d: u32 = if S == -3 || N == 0 { 8 } else { 800 };
            y[0] = a + b + c + d;
        }
    };
    let l = lower_instance(f, quote::quote!(7, -3)).unwrap();
    assert_eq!(setps(&l), 0);
    assert!(
        !ops(&l).iter().any(|o| matches!(o, Op::Selp { .. })),
        "a folded value `if` selects nothing at run time"
    );
}

#[test]
fn a_pruned_branch_may_hold_code_that_only_other_instances_can_lower() {
    // `load8` needs 16-bit elements: the f32 instance must never lower it.
    let f: syn::ItemFn = syn::parse_quote! {
        fn wide<T: Element, const HALF: u32>(x: &[T], y: &mut [T]) {
            let i = thread_idx().x * 8;
            if HALF == 1 {
                let v = x.load8(i);
                y.store8(i, v);
            } else {
                let v = x.load4(i);
                y.store4(i, v);
            }
        }
    };
    lower_instance(f.clone(), quote::quote!(f32, 0)).unwrap();
    lower_instance(f, quote::quote!(bf16, 1)).unwrap();
}

#[test]
fn a_run_time_condition_beside_a_constant_still_tests_at_run_time() {
    let f: syn::ItemFn = syn::parse_quote! {
        fn mixed<const CTA: u32>(y: &mut [f32], n: u32) {
            let t = thread_idx().x;
            if CTA == 1 && t < n {
                y[t] = 1.0;
            }
        }
    };
    let on = lower_instance(f.clone(), quote::quote!(1)).unwrap();
    assert_eq!(setps(&on), 1, "`t < n` stays");
    let off = lower_instance(f, quote::quote!(0)).unwrap();
    assert_eq!(setps(&off), 0);
    assert!(
        !ops(&off).iter().any(|o| matches!(o, Op::St { .. })),
        "the store is pruned"
    );
}

#[test]
fn a_loop_over_a_list_of_constants_unrolls_with_each_value_bound() {
    let f: syn::ItemFn = syn::parse_quote! {
        fn butterfly<const N: u32>(y: &mut [f32]) {
            let mut s = y[thread_idx().x];
            for d in [16, N, 4] {
                s += shfl_xor(s, d);
            }
            y[thread_idx().x] = s;
        }
    };
    let l = lower_instance(f, quote::quote!(8)).unwrap();
    let mut lanes = Vec::new();
    l.kernel.for_each_inst(&mut |i| {
        if matches!(i.op, Op::Shfl { .. }) {
            lanes.push(i.srcs[1].clone());
        }
    });
    assert_eq!(
        lanes,
        [16, 8, 4].map(|v| kernel_dsl::ir::Operand::Imm(kernel_dsl::ir::Imm::Int(v)))
    );
}
