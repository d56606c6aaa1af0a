//! A vector store of bf16 values that were just rounded from f32 rounds them in pairs.

use super::{lower_kernel, ops, Devices, Lowered};
use kernel_dsl::op::Op;
use kernel_dsl::ScalarType;

fn lower_bf16(f: syn::ItemFn) -> Lowered {
    let attr = crate::attr::parse(quote::quote!(instances(<bf16>))).unwrap();
    let inst = crate::instance::resolve(&f, &attr.instances).unwrap();
    lower_kernel(&f, &inst[0].entry, &inst[0].spec, None, &Devices::new()).unwrap()
}

fn pair_roundings(l: &Lowered) -> usize {
    ops(l)
        .iter()
        .filter(|o| {
            matches!(
                o,
                Op::Cvt {
                    dst: ScalarType::Bf16x2,
                    ..
                }
            )
        })
        .count()
}

#[test]
fn eight_results_rounded_just_before_the_store_become_four_pair_roundings() {
    let l = lower_bf16(syn::parse_quote! {
        fn double<T: Element>(x: &[T], y: &mut [T]) {
            let i = thread_idx().x * 8;
            let mut v = x.load_vec::<8>(i);
            for k in 0..8 {
                v[k] = ((v[k] as f32) * 2.0) as T;
            }
            y.store_vec::<8>(i, v);
        }
    });
    assert_eq!(pair_roundings(&l), 4);
}

#[test]
fn a_branch_or_a_later_write_between_rounding_and_store_keeps_the_plain_pack() {
    // Under a branch the store cannot know which value the register holds.
    let branched = lower_bf16(syn::parse_quote! {
        fn double<T: Element>(x: &[T], y: &mut [T], n: u32) {
            let i = thread_idx().x * 2;
            let mut v = x.load_vec::<2>(i);
            if i < n {
                v[0] = ((v[0] as f32) * 2.0) as T;
            }
            v[1] = ((v[1] as f32) * 2.0) as T;
            y.store_vec::<2>(i, v);
        }
    });
    assert_eq!(pair_roundings(&branched), 0);
    // The f32 source written after the rounding: the stored half is the old rounding.
    let rewritten = lower_bf16(syn::parse_quote! {
        fn double<T: Element>(x: &[T], y: &mut [T]) {
            let i = thread_idx().x * 2;
            let mut v = x.load_vec::<2>(i);
            let mut f = v[0] as f32;
            v[0] = f as T;
            v[1] = f as T;
            f += 1.0;
            y.store_vec::<2>(i, v);
            y[i] = f as T;
        }
    });
    assert_eq!(pair_roundings(&rewritten), 0);
}
