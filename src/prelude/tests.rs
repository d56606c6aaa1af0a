//! The stubs here and the rows of `kernel_dsl::intrinsics` name the same intrinsics with the
//! same signatures, so that what rustc and IDEs see cannot drift from what `#[kernel]` accepts.

use kernel_dsl::intrinsics::{Ty, INTRINSICS};
use kernel_dsl::ScalarType;
use quote::ToTokens;
use std::collections::BTreeMap;

/// Every `pub fn` of the prelude, by name.
fn stubs() -> BTreeMap<String, syn::ItemFn> {
    let file = syn::parse_file(include_str!("../prelude.rs")).expect("the prelude parses");
    file.items
        .into_iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                Some((f.sig.ident.to_string(), f))
            }
            _ => None,
        })
        .collect()
}

fn rust_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::U16 => "u16",
        ScalarType::U32 => "u32",
        ScalarType::S32 => "i32",
        ScalarType::U64 => "u64",
        ScalarType::S64 => "i64",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::Pred => "bool",
        other => panic!("no Rust spelling for {other:?} in the prelude"),
    }
}

/// How a stub spells `ty`, without spaces; `None` where the table leaves it to the lowering.
fn spelled(ty: Ty) -> Option<String> {
    match ty {
        Ty::Scalar(t) => Some(rust_name(t).into()),
        Ty::Array(t, n) => Some(format!("[{};{n}]", rust_name(t))),
        Ty::Dim3 => Some("Dim3".into()),
        Ty::Slice { mutable: false } => Some("&[T]".into()),
        Ty::Slice { mutable: true } => Some("&mut[T]".into()),
        Ty::ConstU32 => Some("u32".into()),
        Ty::ConstBool => Some("bool".into()),
        Ty::TensorMap => Some("&TensorMap<T,RANK>".into()),
        Ty::Mbarriers => Some("&mut[u64]".into()),
        Ty::Unit | Ty::Generic | Ty::Shared => None,
    }
}

fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream().to_string().replace(' ', "")
}

#[test]
fn every_intrinsic_has_a_stub_with_its_signature() {
    let stubs = stubs();
    // A name's later rows are methods on other types (`f64::sqrt`), which the host has.
    let first_rows = INTRINSICS
        .iter()
        .enumerate()
        .filter(|(k, i)| INTRINSICS.iter().position(|j| j.name == i.name) == Some(*k))
        .map(|(_, i)| i);
    for intr in first_rows {
        let Some(f) = stubs.get(intr.name) else {
            panic!("`{}` has no stub in src/prelude.rs", intr.name);
        };
        let inputs: Vec<&syn::Type> = f
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(t) => &*t.ty,
                syn::FnArg::Receiver(_) => panic!("`{}` takes self", intr.name),
            })
            .collect();
        assert_eq!(
            inputs.len(),
            intr.params.len(),
            "`{}`: the stub takes {} arguments, the table {}",
            intr.name,
            inputs.len(),
            intr.params.len()
        );
        for (p, ty) in intr.params.iter().zip(&inputs) {
            if let Some(want) = spelled(p.ty) {
                assert_eq!(tokens(*ty), want, "`{}` parameter `{}`", intr.name, p.name);
            }
        }
        match (&f.sig.output, intr.result) {
            (syn::ReturnType::Default, Ty::Unit) => {}
            (syn::ReturnType::Default, other) => {
                panic!(
                    "`{}`: the stub returns nothing, the table {other:?}",
                    intr.name
                )
            }
            (syn::ReturnType::Type(_, t), r) => {
                assert_ne!(r, Ty::Unit, "`{}`: the table returns nothing", intr.name);
                if let Some(want) = spelled(r) {
                    assert_eq!(tokens(&**t), want, "`{}` result", intr.name);
                }
            }
        }
        assert!(
            f.attrs.iter().any(|a| a.path().is_ident("doc")),
            "`{}` has no doc comment",
            intr.name
        );
    }
}

#[test]
fn every_stub_is_an_intrinsic() {
    for name in stubs().keys() {
        assert!(
            kernel_dsl::intrinsics::find(name).is_some(),
            "src/prelude.rs has `{name}`, which kernel_dsl::intrinsics does not list"
        );
    }
}

#[test]
fn host_stubs_of_the_ieee_intrinsics_compute_their_results() {
    use super::*;
    assert_eq!(rsqrt_rn(4.0), 0.5);
    assert_eq!(rcp_rn(8.0), 0.125);
    assert_eq!(ex2_approx_ftz(-130.0), 0.0);
    assert_eq!(ex2_approx_ftz(3.0), 8.0);
    assert_eq!((brev(1), clz(0), clz(1)), (0x8000_0000, 32, 31));
    assert_eq!(dp4a_s8(0x0000_02ff, 0x0000_0303, 10), 10 - 3 + 6);
    assert_eq!(dp4a_u8_s8(0x0000_02ff, 0x0000_03ff, 0), -255 + 6);
    assert_eq!(dp4a_u8(0xff, 0xff, 1), 255 * 255 + 1);
    assert_eq!(prmt(0x80ff_7f01, 0x43, 0x4140), 0x437f_4301);
    assert_eq!(prmt(0x80ff_7f01, 0xdead_beef, 0xba40), 0xffff_ef01);
    assert_eq!(cvt_tf32(f32::from_bits(0x3F80_1000)), 0x3F80_2000);
    assert_eq!(f16_bits_to_f32(0xdead_3c00), 1.0);
    assert_eq!(f16_bits_to_f32(0x0001), 2f32.powi(-24));
}
