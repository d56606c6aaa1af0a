//! The items `#[kernel]` generates for each instance: a `static` `KernelArtifacts` (metadata,
//! PTX per enabled target, cubins, IR and an emit function) and a typed launcher whose
//! arguments mirror the kernel's parameters.

use crate::attr::KernelAttr;
use crate::diag::{err, DResult};
use crate::dsl_type::{host_scalar, variant_tokens};
use crate::lower::Lowered;
use crate::targets::{self, Emitted};
use kernel_dsl::ir::{ParamType, PerfDirectives};
use kernel_dsl::source_map::LineInfo;
use kernel_dsl::BlockContract;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// One instance, lowered and emitted.
pub struct Built {
    pub entry: String,
    /// What each generic parameter stands for in this instance.
    pub spec: crate::lower::Specialization,
    pub lowered: Lowered,
    pub emitted: Vec<Emitted>,
    pub cubins: Vec<Cubin>,
}

/// A cubin assembled at build time.
pub struct Cubin {
    /// The target whose feature enables it.
    pub target: kernel_dsl::Target,
    /// The target the module is for: `target`, or its `a` variant for a kernel that needs it.
    pub module: kernel_dsl::Target,
    /// Which line-info form it was assembled from, where both were emitted.
    pub form: Option<kernel_dsl::source_map::LineInfo>,
    pub bytes: Vec<u8>,
}

/// Everything generated for one kernel function.
pub fn generate(func: &syn::ItemFn, attr: &KernelAttr, built: &[Built]) -> DResult<TokenStream> {
    let krate = attr.krate();
    let dsl = quote!(#krate::dsl);
    let rt = quote!(#krate::runtime);
    let mut out = TokenStream::new();
    let mut statics = Vec::new();
    for b in built {
        let static_name = format_ident!("{}", b.entry.to_uppercase(), span = func.sig.ident.span());
        out.extend(targets::target_errors(&b.emitted));
        out.extend(artifacts(func, b, &static_name, &dsl));
        out.extend(launcher(func, b, &static_name, &dsl, &rt)?);
        statics.push(static_name);
    }
    if !attr.instances.is_empty() {
        let vis = &func.vis;
        let all = format_ident!("{}_INSTANCES", func.sig.ident.to_string().to_uppercase());
        let n = statics.len();
        let doc = format!(
            "Every instance of `{}` built by this crate, for pre-warming.",
            func.sig.ident
        );
        out.extend(quote! {
            #[doc = #doc]
            #vis static #all: [&'static #dsl::KernelArtifacts; #n] = [#(&#statics),*];
        });
        out.extend(crate::dispatch::generic_launcher(
            func, built, &statics, &dsl, &rt,
        )?);
    }
    Ok(out)
}

fn block_tokens(perf: &PerfDirectives, dsl: &TokenStream) -> TokenStream {
    match perf.block_contract() {
        BlockContract::Any => quote!(#dsl::BlockContract::Any),
        BlockContract::Exactly([x, y, z]) => quote!(#dsl::BlockContract::Exactly([#x, #y, #z])),
        BlockContract::AtMost(n) => quote!(#dsl::BlockContract::AtMost(#n)),
    }
}

fn artifacts(
    func: &syn::ItemFn,
    b: &Built,
    static_name: &syn::Ident,
    dsl: &TokenStream,
) -> TokenStream {
    let k = &b.lowered.kernel;
    let entry = &b.entry;
    let params = k.params.iter().map(|p| {
        let name = &p.name;
        let kind = match p.ty {
            ParamType::Scalar(t) => {
                let v = variant_tokens(t);
                quote!(#dsl::ParamKind::Scalar(#dsl::ScalarType::#v))
            }
            ParamType::GlobalPtr { elem, mutable } => {
                let v = variant_tokens(elem);
                quote!(#dsl::ParamKind::Slice { elem: #dsl::ScalarType::#v, mutable: #mutable })
            }
            ParamType::TensorMap => quote!(#dsl::ParamKind::TensorMap),
        };
        quote!(#dsl::ParamMeta { name: ::std::borrow::Cow::Borrowed(#name), kind: #kind })
    });
    let block = block_tokens(&k.perf, dsl);
    let smem = k.static_shared_bytes();
    let dynamic = k.dynamic_shared.is_some();
    let min_dynamic = k.dynamic_shared_min_bytes;
    let waits = k.waits_on_prior_grid();
    let cluster = match k.perf.reqnctapercluster {
        Some([x, y, z]) => quote!(::core::option::Option::Some([#x, #y, #z])),
        None => quote!(::core::option::Option::None),
    };
    let ptx = targets::ptx_entries(&b.emitted, dsl);
    let cubins = b.cubins.iter().map(|c| {
        let cfg = targets::pair_cfg(c.target, c.module);
        let form = match c.form {
            None => TokenStream::new(),
            Some(LineInfo::On) => crate::line_info::cfg_on(),
            Some(LineInfo::Off) => crate::line_info::cfg_off(),
        };
        let tt = targets::target_tokens(c.module, dsl);
        let lit = proc_macro2::Literal::byte_string(&c.bytes);
        quote!(#cfg #form (#tt, #lit),)
    });
    let line_info = crate::line_info::Mode::current().runtime_choice(dsl);
    let ir = proc_macro2::Literal::byte_string(&k.to_packed());
    let vis = &func.vis;
    let doc = format!("Artifacts of the kernel `{entry}`: metadata, PTX for each enabled target, cubins where ptxas was found, and its IR.");
    quote! {
        #[doc = #doc]
        // A crate declares only the `sm_*` features it uses; the others' cfgs are expected.
        #[allow(non_upper_case_globals, unexpected_cfgs)]
        #vis static #static_name: #dsl::KernelArtifacts = #dsl::KernelArtifacts {
            meta: #dsl::KernelMeta {
                entry: ::std::borrow::Cow::Borrowed(#entry),
                params: ::std::borrow::Cow::Borrowed(&[#(#params),*]),
                block: #block,
                static_shared_bytes: #smem,
                uses_dynamic_shared: #dynamic,
                min_dynamic_shared_bytes: #min_dynamic,
                waits_on_prior_grid: #waits,
                cluster: #cluster,
            },
            ptx: ::std::borrow::Cow::Borrowed(&[#ptx]),
            cubins: ::std::borrow::Cow::Borrowed(&[#(#cubins)*]),
            emit: ::core::option::Option::Some({
                fn emit_for(target: #dsl::Target) -> ::core::result::Result<::std::string::String, #dsl::Error> {
                    // The IR is embedded once, in the static's `ir`.
                    let ir = #static_name.ir.unwrap_or_default();
                    let kernel = #dsl::ir::Kernel::from_packed(ir)?;
                    #dsl::emit::emit_with(&kernel, target, #line_info)
                }
                emit_for
            }),
            ir: ::core::option::Option::Some(#ir),
        };
    }
}

fn launcher(
    func: &syn::ItemFn,
    b: &Built,
    static_name: &syn::Ident,
    dsl: &TokenStream,
    rt: &TokenStream,
) -> DResult<TokenStream> {
    let name = format_ident!("{}", b.entry, span = func.sig.ident.span());
    let vis = &func.vis;
    let docs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let mut args = Vec::new();
    let mut conv = Vec::new();
    for (input, p) in func.sig.inputs.iter().zip(&b.lowered.kernel.params) {
        let syn::FnArg::Typed(pt) = input else {
            continue;
        };
        let ident = format_ident!("{}", p.name, span = pt.pat.span());
        if p.name == "stream" || p.name == "cfg" {
            return err(pt.pat.span(), format!("the launcher takes `stream` and `cfg` first, so a kernel parameter cannot be named `{}`: rename it", p.name));
        }
        let map = match crate::dsl_type::param_type(&pt.ty, &b.spec.types)? {
            crate::dsl_type::ParamTy::TensorMap { elem, rank } => Some((elem, rank)),
            _ => None,
        };
        let (arg, to_arg) = host_param(
            pt,
            &ident,
            p.ty,
            map.map(|m| (m, b.entry.as_str(), dsl)),
            rt,
        )?;
        args.push(arg);
        conv.push(to_arg);
    }
    let summary = format!("Launches `{}` on `stream` with the launch shape `cfg`; arguments are checked against the kernel's metadata before the driver sees them.", b.entry);
    Ok(quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #summary]
        #[allow(clippy::too_many_arguments, non_snake_case, dead_code)]
        #vis fn #name(
            stream: &#rt::Stream,
            cfg: #rt::LaunchConfig,
            #(#args),*
        ) -> ::core::result::Result<(), #rt::Error> {
            stream.launch(&#static_name, cfg, &[#(#conv),*])
        }
    })
}

/// A launcher's argument for one kernel parameter of a concrete type, and the expression that
/// turns it into a `KernelArg`: `bool` and scalars by value, `&[T]` and `&mut [T]` as
/// [`slice_param`] takes them, a tensor map as `&TensorMap`, checked against the element type
/// and rank the kernel declares (`map`, where the instance is known) before anything launches.
pub(crate) fn host_param(
    pt: &syn::PatType,
    ident: &syn::Ident,
    ty: ParamType,
    map: Option<((kernel_dsl::ScalarType, u32), &str, &TokenStream)>,
    rt: &TokenStream,
) -> DResult<(TokenStream, TokenStream)> {
    let is_bool = matches!(&*pt.ty, syn::Type::Path(tp) if tp.path.is_ident("bool"));
    let span = pt.ty.span();
    Ok(match ty {
        ParamType::Scalar(_) if is_bool => (
            quote_spanned!(span=> #ident: bool),
            quote!(#rt::KernelArg::from(#ident as u32)),
        ),
        ParamType::Scalar(t) => {
            let t = host_scalar(t, rt);
            (
                quote_spanned!(span=> #ident: #t),
                quote!(#rt::KernelArg::from(#ident)),
            )
        }
        ParamType::GlobalPtr { elem, mutable } => {
            let t = host_scalar(elem, rt);
            slice_param(ident, &t, mutable, span, rt)
        }
        ParamType::TensorMap => {
            let arg = quote_spanned!(span=> #ident: &#rt::TensorMap);
            let Some(((elem, rank), entry, dsl)) = map else {
                return Ok((arg, quote!(#rt::KernelArg::from(#ident))));
            };
            let v = variant_tokens(elem);
            let name = ident.to_string();
            let rank = rank as usize;
            (
                arg,
                quote!(#rt::KernelArg::from(#ident.expect_param(#entry, #name, #dsl::ScalarType::#v, #rank)?)),
            )
        }
    })
}

/// A launcher's argument for a `&[T]` (or `&mut [T]`) parameter, `T` its host type: a
/// `&Buffer<T>` or a `&BufferView` (`&mut Buffer<T>` or `&mut BufferViewMut`), through the
/// runtime's `SliceArg` (`SliceArgMut`), so that an op can pass part of a buffer. A reference
/// parameter reborrows a caller's `&mut Buffer<T>` as a concrete one did.
pub(crate) fn slice_param(
    ident: &syn::Ident,
    t: &TokenStream,
    mutable: bool,
    span: Span,
    rt: &TokenStream,
) -> (TokenStream, TokenStream) {
    if mutable {
        (
            quote_spanned!(span=> #ident: &mut (impl #rt::SliceArgMut<#t> + ?Sized)),
            quote!(#rt::SliceArgMut::<#t>::slice_arg_mut(#ident)),
        )
    } else {
        (
            quote_spanned!(span=> #ident: &(impl #rt::SliceArg<#t> + ?Sized)),
            quote!(#rt::SliceArg::<#t>::slice_arg(#ident)),
        )
    }
}
