//! The types a kernel's Rust source may name, and how each maps to PTX and to the launcher.

use crate::diag::{err, DResult};
use kernel_dsl::ScalarType;
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::BTreeMap;

/// The scalar type a Rust type name stands for, if it is one the DSL knows.
pub fn scalar_from_name(name: &str) -> Option<ScalarType> {
    Some(match name {
        "u32" => ScalarType::U32,
        "i32" => ScalarType::S32,
        "u64" => ScalarType::U64,
        "i64" => ScalarType::S64,
        "f32" => ScalarType::F32,
        "f64" => ScalarType::F64,
        "f16" => ScalarType::F16,
        "bf16" => ScalarType::Bf16,
        "bool" => ScalarType::Pred,
        _ => return None,
    })
}

/// The Rust spelling of a DSL scalar type, for messages.
pub fn rust_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::U32 => "u32",
        ScalarType::S32 => "i32",
        ScalarType::U64 => "u64",
        ScalarType::S64 => "i64",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::F16 => "f16",
        ScalarType::Bf16 => "bf16",
        ScalarType::Pred => "bool",
        ScalarType::U16 => "u16",
        ScalarType::S16 => "i16",
        ScalarType::U8 => "u8",
        ScalarType::S8 => "i8",
        _ => t.ptx(),
    }
}

/// The `ScalarType` variant's name, for generated code.
pub fn variant_tokens(t: ScalarType) -> TokenStream {
    let name = format!("{t:?}");
    let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
    quote!(#ident)
}

/// A kernel parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamTy {
    Scalar(ScalarType),
    Slice {
        elem: ScalarType,
        mutable: bool,
    },
    /// `&TensorMap<T, RANK>`: a tensor map over elements of `T` with `RANK` dimensions (1 to
    /// 5), which the bulk tensor copy reads.
    TensorMap {
        elem: ScalarType,
        rank: u32,
    },
}

const SUPPORTED: &str = "u32, i32, u64, i64, f32, f64, f16, bf16, bool";

/// Resolves a type path such as `f32` or a type parameter `T` (through `generics`).
pub fn scalar_of(ty: &syn::Type, generics: &BTreeMap<String, ScalarType>) -> DResult<ScalarType> {
    if let syn::Type::Path(p) = ty {
        if p.qself.is_none() {
            if let Some(last) = p.path.segments.last() {
                let name = last.ident.to_string();
                if let Some(t) = generics.get(&name) {
                    return Ok(*t);
                }
                if let Some(t) = scalar_from_name(&name) {
                    return Ok(t);
                }
                if name == "usize" || name == "isize" {
                    return err(crate::diag::range(&ty), format!("`{name}` has no fixed width on the GPU: use `u32` (or `u64` for offsets past 4 Gi elements)"));
                }
                return err(crate::diag::range(&ty), format!("`{name}` is not a kernel type: kernels take {SUPPORTED}, slices of those, or a type parameter listed in `instances(...)`"));
            }
        }
    }
    err(
        crate::diag::range(&ty),
        format!("unsupported type in a kernel: expected one of {SUPPORTED}"),
    )
}

/// Resolves a kernel parameter's declared type.
pub fn param_type(ty: &syn::Type, generics: &BTreeMap<String, ScalarType>) -> DResult<ParamTy> {
    match ty {
        syn::Type::Reference(r) => {
            if let Some(t) = tensor_map_type(&r.elem, generics)? {
                if r.mutability.is_some() {
                    return err(
                        crate::diag::range(&ty),
                        "a tensor map is read-only in a kernel: write `&TensorMap<T, RANK>`",
                    );
                }
                return Ok(t);
            }
            let syn::Type::Slice(s) = &*r.elem else {
                return err(
                    crate::diag::range(&ty),
                    "a kernel takes buffers as slices: write `&[T]` or `&mut [T]`",
                );
            };
            let elem = scalar_of(&s.elem, generics)?;
            if elem == ScalarType::Pred {
                return err(crate::diag::range(&s.elem), "`bool` has no defined memory layout on the GPU: pass a `&[u32]` of 0/1 instead");
            }
            Ok(ParamTy::Slice {
                elem,
                mutable: r.mutability.is_some(),
            })
        }
        syn::Type::Slice(_) | syn::Type::Array(_) => err(
            crate::diag::range(&ty),
            "a kernel cannot take an array or slice by value: take it as `&[T]` or `&mut [T]`",
        ),
        _ => Ok(ParamTy::Scalar(scalar_of(ty, generics)?)),
    }
}

/// `TensorMap<T, RANK>`, if `ty` names one.
fn tensor_map_type(
    ty: &syn::Type,
    generics: &BTreeMap<String, ScalarType>,
) -> DResult<Option<ParamTy>> {
    let syn::Type::Path(p) = ty else {
        return Ok(None);
    };
    let Some(last) = p.path.segments.last() else {
        return Ok(None);
    };
    if last.ident != "TensorMap" {
        return Ok(None);
    }
    let usage = "a tensor map names its element type and rank: `&TensorMap<bf16, 2>`";
    let syn::PathArguments::AngleBracketed(ab) = &last.arguments else {
        return err(crate::diag::range(&ty), usage);
    };
    let args: Vec<_> = ab.args.iter().collect();
    let [syn::GenericArgument::Type(elem), rank] = args.as_slice() else {
        return err(crate::diag::range(&ab), usage);
    };
    let elem = scalar_of(elem, generics)?;
    let rank = match rank {
        syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        })) => i.base10_parse::<u32>().ok(),
        syn::GenericArgument::Type(syn::Type::Path(_)) => None,
        _ => None,
    };
    match rank {
        Some(r @ 1..=5) => Ok(Some(ParamTy::TensorMap { elem, rank: r })),
        _ => err(
            crate::diag::range(&args[1]),
            "a tensor map's rank is a literal from 1 to 5: `&TensorMap<bf16, 2>`",
        ),
    }
}

/// The host-side Rust type of a scalar, under the runtime path `rt`.
pub fn host_scalar(t: ScalarType, rt: &TokenStream) -> TokenStream {
    match t {
        ScalarType::F16 => quote!(#rt::F16),
        ScalarType::Bf16 => quote!(#rt::Bf16),
        ScalarType::Pred => quote!(bool),
        other => {
            let name = syn::Ident::new(rust_name(other), proc_macro2::Span::call_site());
            quote!(#name)
        }
    }
}
