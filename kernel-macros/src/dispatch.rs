//! The launcher generic over a kernel's parameters: for `rms_norm<T, const W: u32>` with
//! instances, `rms_norm::<T>(stream, cfg, w, x, …)` picks the instance that `T` and `w` name at
//! run time; an op type parameter (`map::<T, Silu>`) is told apart by its `TypeId`. An
//! instance that was not built is `Error::NoInstance`, which lists those that were.

use crate::codegen::Built;
use crate::diag::{err, DResult};
use crate::dsl_type::{rust_name, variant_tokens};
use kernel_dsl::ScalarType;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// A type parameter's name, if `ty` is exactly one.
fn type_param<'a>(ty: &syn::Type, params: &'a [syn::Ident]) -> Option<&'a syn::Ident> {
    match ty {
        syn::Type::Path(p) => params.iter().find(|i| p.path.is_ident(*i)),
        _ => None,
    }
}

/// `&[X]` or `&mut [X]` with `X` a type parameter: (`X`, mutable).
fn slice_of_param<'a>(ty: &syn::Type, params: &'a [syn::Ident]) -> Option<(&'a syn::Ident, bool)> {
    let syn::Type::Reference(r) = ty else {
        return None;
    };
    let syn::Type::Slice(s) = &*r.elem else {
        return None;
    };
    type_param(&s.elem, params).map(|i| (i, r.mutability.is_some()))
}

/// The launcher's argument for a const parameter: its name in lower case, spanned like the
/// parameter so that every use resolves to it.
fn const_arg(c: &syn::ConstParam) -> syn::Ident {
    format_ident!(
        "{}",
        c.ident.to_string().to_lowercase(),
        span = c.ident.span()
    )
}

pub fn generic_launcher(
    func: &syn::ItemFn,
    built: &[Built],
    statics: &[syn::Ident],
    dsl: &TokenStream,
    rt: &TokenStream,
) -> DResult<TokenStream> {
    let generics = &func.sig.generics.params;
    let type_params: Vec<syn::Ident> = generics
        .iter()
        .filter_map(|g| match g {
            // Op parameters never type a buffer.
            syn::GenericParam::Type(t) if !crate::instance::is_op_param(t) => Some(t.ident.clone()),
            _ => None,
        })
        .collect();
    let first = &built[0];
    let mut const_args = Vec::new();
    let mut generic_bounds = Vec::new();
    for g in generics {
        match g {
            syn::GenericParam::Type(t) if crate::instance::is_op_param(t) => {
                let (id, bounds) = (&t.ident, &t.bounds);
                generic_bounds.push(quote!(#id: #bounds + 'static));
            }
            syn::GenericParam::Type(t) => {
                let id = &t.ident;
                generic_bounds.push(quote!(#id: #rt::Element));
            }
            syn::GenericParam::Const(c) => {
                let arg = const_arg(c);
                let ty = &c.ty;
                const_args.push(quote_spanned!(c.ident.span()=> #arg: #ty));
            }
            syn::GenericParam::Lifetime(l) => {
                return err(
                    crate::diag::range(&l),
                    "kernels take no lifetime parameters",
                )
            }
        }
    }
    let mut args = Vec::new();
    let mut conv = Vec::new();
    for (input, p) in func.sig.inputs.iter().zip(&first.lowered.kernel.params) {
        let syn::FnArg::Typed(pt) = input else {
            continue;
        };
        let ident = format_ident!("{}", p.name, span = pt.pat.span());
        if let Some((t, mutable)) = slice_of_param(&pt.ty, &type_params) {
            let t = quote!(#t);
            let (arg, to_arg) = crate::codegen::slice_param(&ident, &t, mutable, pt.ty.span(), rt);
            args.push(arg);
            conv.push(to_arg);
            continue;
        }
        if let Some(t) = type_param(&pt.ty, &type_params) {
            args.push(quote_spanned!(pt.ty.span()=> #ident: #t));
            conv.push(quote!(#rt::KernelArg::Scalar(<#t as #rt::Element>::to_scalar(#ident))));
            continue;
        }
        let (arg, to_arg) = crate::codegen::host_param(pt, &ident, p.ty, None, rt)?;
        args.push(arg);
        conv.push(to_arg);
    }
    // One test per instance: every generic parameter equals what the instance was built for.
    let mut arms = Vec::new();
    let mut names = Vec::new();
    for (b, s) in built.iter().zip(statics) {
        let mut tests = Vec::new();
        let mut shown = Vec::new();
        for g in generics {
            match g {
                syn::GenericParam::Type(t) if crate::instance::is_op_param(t) => {
                    let name = &b.spec.ops[&t.ident.to_string()];
                    let (id, ty) = (&t.ident, format_ident!("{}", name, span = t.ident.span()));
                    tests.push(quote!(
                        ::core::any::TypeId::of::<#id>() == ::core::any::TypeId::of::<#ty>()
                    ));
                    shown.push(name.clone());
                }
                syn::GenericParam::Type(t) => {
                    let ty = b.spec.types[&t.ident.to_string()];
                    let (id, v) = (&t.ident, variant_tokens(ty));
                    tests.push(quote!(<#id as #rt::Element>::SCALAR == #dsl::ScalarType::#v));
                    shown.push(rust_name(ty).to_string());
                }
                syn::GenericParam::Const(c) => {
                    let (v, ty) = b.spec.consts[&c.ident.to_string()];
                    let arg = const_arg(c);
                    tests.push(if ty == ScalarType::Pred {
                        let b = v != 0;
                        quote!(#arg == #b)
                    } else {
                        let lit = proc_macro2::Literal::i64_unsuffixed(v);
                        quote!(#arg == #lit)
                    });
                    shown.push(v.to_string());
                }
                syn::GenericParam::Lifetime(_) => {}
            }
        }
        arms.push(quote!(if true #(&& #tests)* { &#s }));
        names.push(format!("<{}>", shown.join(", ")));
    }
    let available = names.join(", ");
    let kernel = func.sig.ident.to_string();
    let name = &func.sig.ident;
    let vis = &func.vis;
    let docs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let fmt = vec!["{}"; generics.len()].join(", ");
    let fmt = format!("<{fmt}>");
    let shown = generics.iter().map(|g| match g {
        syn::GenericParam::Type(t) if crate::instance::is_op_param(t) => {
            let id = &t.ident;
            quote!(::std::any::type_name::<#id>().rsplit("::").next().unwrap_or_default().to_string())
        }
        syn::GenericParam::Type(t) => {
            let id = &t.ident;
            quote!(::std::format!("{:?}", <#id as #rt::Element>::SCALAR).to_lowercase())
        }
        syn::GenericParam::Const(c) => {
            let arg = const_arg(c);
            quote!(#arg.to_string())
        }
        syn::GenericParam::Lifetime(_) => quote!(String::new()),
    });
    let summary = format!(
        "Launches the instance of `{kernel}` that the element types and constants select, one of {available}; another is `Error::NoInstance`."
    );
    Ok(quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #summary]
        #[allow(clippy::too_many_arguments, non_snake_case, dead_code, clippy::nonminimal_bool)]
        #vis fn #name<#(#generic_bounds),*>(
            stream: &#rt::Stream,
            cfg: #rt::LaunchConfig,
            #(#const_args,)*
            #(#args),*
        ) -> ::core::result::Result<(), #rt::Error> {
            let artifacts: &'static #dsl::KernelArtifacts = #(#arms else)* {
                return ::core::result::Result::Err(#rt::Error::NoInstance {
                    kernel: #kernel,
                    requested: ::std::format!(#fmt, #(#shown),*),
                    available: #available,
                });
            };
            stream.launch(artifacts, cfg, &[#(#conv),*])
        }
    })
}
