//! The pipeline of one `#[kernel]`: resolve `#[device]` helpers, resolve instances, lower,
//! emit for every target, generate items. Any diagnostic becomes `compile_error!` beside a stub
//! of the function, so the rest of the crate still resolves its name.
//!
//! `#[device]` helpers are found through macros: `#[device] fn silu(..)` also defines a
//! `macro_rules! silu` that forwards whatever it is given to `__kernel_expand!` together with
//! the helper's tokens. A kernel that calls a function which is neither an intrinsic nor a
//! helper it already holds expands to `silu! { <helpers so far> kernel(<attr>) <fn> }`; the
//! chain ends when every call is resolved. A helper must therefore be defined before the
//! kernels that call it, in the same module or an enclosing one (macro_rules scoping).

use crate::attr::{self, KernelAttr};
use crate::codegen::{self, Built, Cubin};
use crate::diag::{DResult, Diag};
use crate::instance::Resolved;
use crate::lower::{self, Devices};
use crate::{cubin, instance, targets};
use kernel_dsl::source_map::LineInfo;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use syn::parse::{Parse, ParseStream};

/// `#[kernel(attr)] item`.
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        // Keep the tokens as written so an IDE still sees the item while it is being typed.
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(item);
            return out;
        }
    };
    crate::known::note_kernel(&func.sig.ident.to_string());
    run(attr, func, Devices::new())
}

/// `__kernel_expand! { device { fn … } … kernel(attr) fn … }`.
pub fn kernel_with_devices(input: TokenStream) -> TokenStream {
    let payload: Payload = match syn::parse2(input) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    run(payload.attr, payload.func, payload.devices)
}

/// The device function a trait method of an op type stands for inside kernels:
/// `Silu::apply` is `Silu__apply`.
pub fn op_method_name(ty: &str, method: &str) -> String {
    format!("{ty}__{method}")
}

/// The crate path of `#[device(attr)]`, which takes `crate = path` and nothing else; `at` is
/// where a kernel argument is reported.
fn device_crate(attr: TokenStream, at: crate::diag::SpanRange) -> DResult<TokenStream> {
    let a = attr::parse(attr)?;
    if a.has_kernel_arguments() {
        return Err(Diag::new(at, "`#[device]` takes only `crate = path`"));
    }
    Ok(a.krate())
}

/// `#[device(attr)] impl Trait for Type { fn … }`: each method becomes a device function named
/// [`op_method_name`], fetched by kernels whose op type parameter stands for `Type`; on the
/// host the impl keeps its signatures with bodies that never run.
fn device_impl(attr: TokenStream, imp: syn::ItemImpl) -> TokenStream {
    let krate = match device_crate(attr, crate::diag::range(&imp.self_ty)) {
        Ok(k) => k,
        Err(d) => return d.to_compile_error(),
    };
    let syn::Type::Path(tp) = &*imp.self_ty else {
        return Diag::new(
            crate::diag::range(&imp.self_ty),
            "`#[device] impl` is for a named type: `impl UnaryOp for Silu`",
        )
        .to_compile_error();
    };
    let ty = tp
        .path
        .segments
        .last()
        .expect("a path has a segment")
        .ident
        .to_string();
    let mut macros = TokenStream::new();
    let mut host = imp.clone();
    for item in &mut host.items {
        let syn::ImplItem::Fn(m) = item else {
            continue;
        };
        let name = op_method_name(&ty, &m.sig.ident.to_string());
        crate::known::note_device(&name);
        let mut func = syn::ItemFn {
            attrs: Vec::new(),
            vis: syn::Visibility::Inherited,
            sig: m.sig.clone(),
            block: Box::new(m.block.clone()),
        };
        func.sig.ident = format_ident!("{}", name, span = m.sig.ident.span());
        let mac = format_ident!("__device__{}", name, span = m.sig.ident.span());
        macros.extend(quote! {
            #[doc(hidden)]
            #[allow(unused_macros, non_snake_case)]
            macro_rules! #mac {
                ($($rest:tt)*) => { #krate::__kernel_expand! { device { #func } $($rest)* } };
            }
        });
        let why = format!(
            "`{ty}::{}` is a #[device] method: it runs inside kernels only",
            m.sig.ident
        );
        m.block = syn::parse_quote!({ ::core::unreachable!(#why) });
        m.attrs.push(syn::parse_quote!(#[allow(unused_variables)]));
    }
    quote!(#macros #host)
}

/// `#[device(attr)] fn` or `#[device(attr)] impl Trait for Type`.
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Ok(imp) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return device_impl(attr, imp);
    }
    if let Ok(c) = syn::parse2::<syn::ItemConst>(item.clone()) {
        // A module-level constant kernels may name: the host keeps the item as written.
        if let Err(d) = device_crate(attr, crate::diag::range(&c.ident)) {
            return d.to_compile_error();
        }
        crate::known::note_const(&c);
        return quote!(#c);
    }
    let func: syn::ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    let krate = match device_crate(attr, func.sig.ident.span().into()) {
        Ok(k) => k,
        Err(d) => return d.to_compile_error(),
    };
    let name = &func.sig.ident;
    crate::known::note_device(&name.to_string());
    let stub = stub(
        &func,
        &format!("`{name}` is a #[device] function: it runs inside kernels only"),
    );
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #name {
            ($($rest:tt)*) => { #krate::__kernel_expand! { device { #func } $($rest)* } };
        }
        #stub
    }
}

struct Payload {
    devices: Devices,
    attr: TokenStream,
    func: syn::ItemFn,
}

impl Parse for Payload {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut devices = Devices::new();
        loop {
            let key: syn::Ident = input.parse()?;
            if key == "device" {
                let content;
                syn::braced!(content in input);
                let f: syn::ItemFn = content.parse()?;
                devices.insert(f.sig.ident.to_string(), f);
            } else if key == "kernel" {
                let content;
                syn::parenthesized!(content in input);
                let attr: TokenStream = content.parse()?;
                let func: syn::ItemFn = input.parse()?;
                return Ok(Payload {
                    devices,
                    attr,
                    func,
                });
            } else {
                return Err(syn::Error::new(
                    key.span(),
                    "malformed `__kernel_expand!` input",
                ));
            }
        }
    }
}

fn run(attr_tokens: TokenStream, func: syn::ItemFn, devices: Devices) -> TokenStream {
    let attr = match attr::parse(attr_tokens.clone()).and_then(|mut a| {
        attr::expand_product(&mut a, &func.sig.generics)?;
        Ok(a)
    }) {
        Ok(a) => a,
        Err(d) => return with_stub(&func, d),
    };
    // The types each op parameter stands for across the instances: their `#[device] impl`
    // methods are fetched like helpers. (A malformed instance is reported by `build`.)
    let mut ops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for inst in instance::resolve(&func, &attr.instances).unwrap_or_default() {
        for (param, ty) in inst.spec.ops {
            ops.entry(param).or_default().insert(ty);
        }
    }
    if let Some(missing) = unresolved_call(&func, &devices, &ops) {
        if let Some(d) = not_a_helper(&missing.0, missing.1) {
            return with_stub(&func, d);
        }
        // Ask the helper's macro to hand its tokens back (see the module docs).
        let mac = format_ident!("{}", missing.0, span = missing.1);
        let ds = devices.values();
        return quote! { #mac! { #(device { #ds })* kernel(#attr_tokens) #func } };
    }
    match build(&attr, &func, &devices).and_then(|built| codegen::generate(&func, &attr, &built)) {
        Ok(tokens) => tokens,
        Err(d) => with_stub(&func, d),
    }
}

fn build(attr: &KernelAttr, func: &syn::ItemFn, devices: &Devices) -> DResult<Vec<Built>> {
    attr::check_instances(attr, &func.sig.generics)?;
    let timing = std::env::var_os("PTXKIT_MACRO_TIMING").is_some();
    let announced = cubin::announced_targets();
    let ptxas = if announced.is_empty() {
        None
    } else {
        cubin::find_ptxas()
    };
    let mut out = Vec::new();
    for inst in instance::resolve(func, &attr.instances)? {
        let named = Resolved {
            spec: Default::default(),
            entry: inst.entry.clone(),
            label: inst.label.clone(),
        };
        let built = build_instance(attr, func, devices, inst, (&announced, &ptxas), timing);
        out.push(built.map_err(|d| named.note(d))?);
    }
    Ok(out)
}

/// Lowers, emits and assembles one instance. Errors of the per-target emission carry the
/// instance's note already; the caller adds it to the others.
fn build_instance(
    attr: &KernelAttr,
    func: &syn::ItemFn,
    devices: &Devices,
    inst: Resolved,
    (announced, ptxas): (&[kernel_dsl::Target], &Option<std::path::PathBuf>),
    timing: bool,
) -> DResult<Built> {
    let t0 = Instant::now();
    let block = match &attr.block {
        Some(dims) => {
            let mut shape = [1u32; 3];
            for (k, e) in dims.iter().enumerate() {
                let v = instance::eval(e, &inst.spec)?;
                if !(1..=1024).contains(&v) {
                    return Err(Diag::new(
                        syn::spanned::Spanned::span(e),
                        format!("a block dimension of {v} is not possible: 1 to 1024"),
                    ));
                }
                shape[k] = v as u32;
            }
            Some(shape)
        }
        None => None,
    };
    let max_threads = match &attr.max_threads {
        Some(e) if attr.block.is_some() => {
            return Err(Diag::new(
                crate::diag::range(e),
                "give either `block` (an exact shape) or `max_threads` (an upper bound), not both",
            ));
        }
        Some(e) => {
            let v = instance::eval(e, &inst.spec)?;
            if !(1..=1024).contains(&v) {
                return Err(Diag::new(
                    crate::diag::range(e),
                    format!("`max_threads = {v}` is not possible: 1 to 1024"),
                ));
            }
            Some(v as u32)
        }
        None => None,
    };
    let (maxnreg, min_blocks) = register_bounds(attr, &inst.spec)?;
    let cluster = cluster_shape(attr, &inst.spec)?;
    let mut lowered = lower::lower_kernel(func, &inst.entry, &inst.spec, block, devices)?;
    let perf = &mut lowered.kernel.perf;
    if let Some(n) = max_threads {
        perf.maxntid = Some([n, 1, 1]);
    }
    perf.maxnreg = maxnreg;
    perf.minnctapersm = min_blocks;
    perf.reqnctapercluster = cluster;
    let t1 = Instant::now();
    let mode = crate::line_info::Mode::current();
    let mut emitted = targets::emit_all(
        &lowered,
        crate::diag::range(&func.sig.ident),
        attr.needs,
        mode,
    );
    // A cluster shape on a target without clusters is an error at the attribute, not at the
    // kernel as a whole.
    if let (Some(_), Some((_, at))) = (cluster, &attr.cluster) {
        let req = kernel_dsl::catalog::cluster_requirement();
        for e in &mut emitted {
            if !req.admits(e.module) {
                e.ptx = Err(Diag::new(*at, format!("a cluster shape (`.reqnctapercluster`) needs {req}, but this crate builds for {}", e.module)));
                e.with_lines = None;
                e.lowest = kernel_dsl::Target::ALL.into_iter().find(|t| req.admits(*t));
            }
        }
    }
    for e in &mut emitted {
        if let Err(d) = &mut e.ptx {
            *d = inst.note(d.clone());
        }
    }
    let t2 = Instant::now();
    let mut cubins = Vec::new();
    if let Some(ptxas) = &ptxas {
        for e in &emitted {
            if let (true, Ok(ptx)) = (announced.contains(&e.target), &e.ptx) {
                let form = e.with_lines.as_ref().map(|_| LineInfo::Off);
                if let Some(bin) = cubin::assemble(ptxas, ptx, e.module, &inst.entry) {
                    cubins.push(Cubin {
                        target: e.target,
                        module: e.module,
                        form,
                        bytes: bin,
                    });
                }
                if let Some(lined) = &e.with_lines {
                    if let Some(bin) = cubin::assemble(ptxas, lined, e.module, &inst.entry) {
                        let form = Some(LineInfo::On);
                        cubins.push(Cubin {
                            target: e.target,
                            module: e.module,
                            form,
                            bytes: bin,
                        });
                    }
                }
            }
        }
    }
    if timing {
        eprintln!(
            "ptxkit-macro-timing kernel={} lower_us={} emit_all_us={} targets={} per_target_us={:.1}",
            inst.entry,
            (t1 - t0).as_micros(),
            (t2 - t1).as_micros(),
            emitted.len(),
            (t2 - t1).as_micros() as f64 / emitted.len() as f64
        );
    }
    Ok(Built {
        entry: inst.entry,
        spec: inst.spec,
        lowered,
        emitted,
        cubins,
    })
}

/// The macro to ask for the first called helper that is neither an intrinsic nor known yet
/// (sorted, so the expansion is the same every build): a `#[device] fn`'s own name, or for
/// `O::m(..)` with `O` an op parameter, each type's `__device__Type__m`.
fn unresolved_call(
    func: &syn::ItemFn,
    devices: &Devices,
    ops: &BTreeMap<String, BTreeSet<String>>,
) -> Option<(String, proc_macro2::Span)> {
    struct Calls(
        Vec<(String, proc_macro2::Span)>,
        BTreeSet<String>,
        Vec<(String, String, proc_macro2::Span)>,
    );
    impl<'ast> syn::visit::Visit<'ast> for Calls {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            // A local name (a closure, say) is not a helper; lowering reports it.
            self.1.insert(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                if p.path.segments.len() == 1 {
                    let seg = &p.path.segments[0];
                    self.0.push((seg.ident.to_string(), seg.ident.span()));
                }
                if let [ty, method] = &p.path.segments.iter().collect::<Vec<_>>()[..] {
                    self.2.push((
                        ty.ident.to_string(),
                        method.ident.to_string(),
                        method.ident.span(),
                    ));
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut calls = Calls(Vec::new(), BTreeSet::new(), Vec::new());
    syn::visit::Visit::visit_block(&mut calls, &func.block);
    for d in devices.values() {
        syn::visit::Visit::visit_block(&mut calls, &d.block);
    }
    let mut missing: Vec<_> = calls
        .0
        .into_iter()
        .filter(|(n, _)| {
            kernel_dsl::intrinsics::find(n).is_none()
                && !devices.contains_key(n)
                && !calls.1.contains(n)
        })
        .collect();
    for (param, method, span) in &calls.2 {
        for ty in ops.get(param).into_iter().flatten() {
            let name = op_method_name(ty, method);
            if !devices.contains_key(&name) {
                missing.push((format!("__device__{name}"), *span));
            }
        }
    }
    missing.sort_by(|a, b| a.0.cmp(&b.0));
    missing.into_iter().next()
}

/// The error for a called `name` that no `#[device]` function expanded so far has (where the
/// order of expansion is known: see `known.rs`), instead of rustc's for a missing macro.
fn not_a_helper(name: &str, at: proc_macro2::Span) -> Option<Diag> {
    if name.starts_with("__device__") || !crate::known::trusted() {
        return None;
    }
    let message = match crate::known::callee(name) {
        crate::known::Callee::Device => return None,
        crate::known::Callee::Kernel => format!(
            "`{name}` is a kernel, and a kernel cannot call another kernel: move the code they share into a `#[device] fn` defined above both, and call it from each"
        ),
        crate::known::Callee::Unknown(near) => {
            let hint = match &near[..] {
                [] => format!("define it as `#[device] fn {name}(..)` above this kernel, or call an intrinsic from `ptxkit::prelude`"),
                [one] => format!("did you mean `{one}`?"),
                [first @ .., last] => format!(
                    "did you mean {} or `{last}`?",
                    first.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            format!("unknown function `{name}`: kernels call intrinsics and `#[device]` functions defined above them; {hint}")
        }
    };
    Some(Diag::new(at, message))
}

/// The function's signature with a body that never runs.
fn stub(func: &syn::ItemFn, why: &str) -> TokenStream {
    let attrs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let vis = &func.vis;
    let sig = &func.sig;
    quote! {
        #(#attrs)*
        #[allow(unused_variables, dead_code, clippy::all)]
        #vis #sig { ::core::unreachable!(#why) }
    }
}

fn with_stub(func: &syn::ItemFn, d: Diag) -> TokenStream {
    let e = d.to_compile_error();
    let s = stub(func, "this kernel did not compile");
    quote!(#e #s)
}

/// `cluster = …` for one instance, checked: every dimension at least 1, and at most 8 blocks
/// in all, the cluster size every sm_90+ device launches (larger ones are opt-in per kernel
/// and device).
fn cluster_shape(attr: &KernelAttr, spec: &lower::Specialization) -> DResult<Option<[u32; 3]>> {
    let Some((dims, at)) = &attr.cluster else {
        return Ok(None);
    };
    let mut shape = [1u32; 3];
    for (k, e) in dims.iter().enumerate() {
        let v = instance::eval(e, spec)?;
        if !(1..=8).contains(&v) {
            return Err(Diag::new(
                crate::diag::range(e),
                format!("a cluster dimension of {v} is not possible: 1 to 8"),
            ));
        }
        shape[k] = v as u32;
    }
    let ctas: u32 = shape.iter().product();
    if ctas > 8 {
        return Err(Diag::new(
            *at,
            format!("a cluster of {shape:?} holds {ctas} blocks, more than the portable 8: make it at most 8 blocks"),
        ));
    }
    Ok(Some(shape))
}

/// `maxnreg = …` and `min_blocks = …` for one instance, checked.
fn register_bounds(
    attr: &KernelAttr,
    spec: &lower::Specialization,
) -> DResult<(Option<u32>, Option<u32>)> {
    let maxnreg = match &attr.maxnreg {
        Some(e) => {
            let v = instance::eval(e, spec)?;
            if v != 0 && !(16..=255).contains(&v) {
                return Err(Diag::new(
                    crate::diag::range(e),
                    format!("`maxnreg = {v}` is not possible: a thread has 16 to 255 registers (0 leaves the choice to ptxas)"),
                ));
            }
            // 0: no cap for this instance (`maxnreg = if W == 4 { 64 } else { 0 }`).
            (v != 0).then_some(v as u32)
        }
        None => None,
    };
    let min_blocks = match &attr.min_blocks {
        Some(e) if maxnreg.is_some() => {
            return Err(Diag::new(
                crate::diag::range(e),
                "give either `maxnreg` (a register cap) or `min_blocks` (blocks per SM, from which ptxas derives the cap), not both",
            ))
        }
        Some(e) if attr.block.is_none() && attr.max_threads.is_none() => {
            return Err(Diag::new(
                crate::diag::range(e),
                "`min_blocks` counts blocks of a known size: add `block = …` or `max_threads = …`",
            ))
        }
        Some(e) => {
            let v = instance::eval(e, spec)?;
            if v > 32 {
                return Err(Diag::new(
                    crate::diag::range(e),
                    format!("`min_blocks = {v}` is not possible: an SM holds 1 to 32 blocks (0 leaves the choice to ptxas)"),
                ));
            }
            // 0: no bound for this instance (`min_blocks = if A == 1 { 2 } else { 0 }`).
            (v != 0).then_some(v as u32)
        }
        None => None,
    };
    Ok((maxnreg, min_blocks))
}
