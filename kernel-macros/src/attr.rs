//! The arguments of `#[kernel(...)]`:
//!
//! - `instances(<f32, 256>, <bf16, 256>)`: the specializations to build, one generic argument
//!   list per instance, in the order of the function's generic parameters; or as a cross
//!   product, `instances(T in [f32, bf16], W in [1, T::VEC])`, one axis per generic parameter
//!   in declaration order, where an axis may use the parameters before it;
//! - `block = 256` or `block = (32, 8, 1)`: the exact block shape the kernel requires
//!   (`.reqntid`); the values may name const parameters;
//! - `max_threads = 256`: an upper bound on the block's threads instead (`.maxntid`);
//! - `maxnreg = 64`: at most this many registers per thread (`.maxnreg`), so that more
//!   threads fit on an SM;
//! - `min_blocks = 2`: ptxas keeps registers low enough for this many blocks per SM
//!   (`.minnctapersm`); needs `block` or `max_threads`, since the bound counts threads; like
//!   `maxnreg`, it may depend on the instance, and 0 sets no bound for that instance;
//! - `needs = sm_90a`: the kernel is built only for the enabled targets that can run it: that
//!   target itself, or its SM's plain target (sm_90 builds the sm_90a module, as the runtime
//!   loads on such a device); other enabled targets get no module and no error, and the
//!   runtime emits it from the IR where a device asks for it;
//! - `cluster = 2` or `cluster = [2, 1, 1]`: the kernel launches in thread-block clusters of
//!   this shape (`.reqnctapercluster`, sm_90+), at most 8 blocks (the portable size); a
//!   launch's grid must be a multiple of it in every dimension;
//! - `crate = some::path`: where the generated code finds ptxkit's items (default `::ptxkit`).

use crate::diag::{err, DResult};
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, GenericArgument, Token};

/// One instance: the generic arguments, as written.
#[derive(Clone)]
pub struct Instance {
    pub args: Vec<GenericArgument>,
    pub span: proc_macro2::Span,
}

/// One axis of a cross product: a generic parameter and the values it takes.
#[derive(Clone)]
pub struct Axis {
    pub param: syn::Ident,
    pub values: Vec<Expr>,
}

#[derive(Clone, Default)]
pub struct KernelAttr {
    pub instances: Vec<Instance>,
    /// `instances(T in [..], N in [..])`: expanded into `instances` by [`expand_product`].
    pub product: Vec<Axis>,
    pub block: Option<Vec<Expr>>,
    /// `max_threads = N`: at most N threads per block (`.maxntid N, 1, 1`).
    pub max_threads: Option<Expr>,
    /// `maxnreg = N`: at most N registers per thread (`.maxnreg N`).
    pub maxnreg: Option<Expr>,
    /// `min_blocks = N`: at least N resident blocks per SM (`.minnctapersm N`).
    pub min_blocks: Option<Expr>,
    /// `needs = sm_90a`: build only for the enabled targets that can run that target's code.
    pub needs: Option<kernel_dsl::Target>,
    /// `cluster = 2` or `cluster = [2, 1, 1]`: the cluster shape (`.reqnctapercluster`).
    pub cluster: Option<(Vec<Expr>, crate::diag::SpanRange)>,
    pub krate: Option<syn::Path>,
}

impl KernelAttr {
    /// Whether anything beyond `crate = path` was given (all a `#[device]` may take).
    pub fn has_kernel_arguments(&self) -> bool {
        !self.instances.is_empty()
            || !self.product.is_empty()
            || self.block.is_some()
            || self.max_threads.is_some()
            || self.maxnreg.is_some()
            || self.min_blocks.is_some()
            || self.needs.is_some()
            || self.cluster.is_some()
    }

    /// The path prefix generated code uses for ptxkit's items.
    pub fn krate(&self) -> TokenStream {
        match &self.krate {
            Some(p) => quote!(#p),
            None => quote!(::ptxkit),
        }
    }
}

struct InstanceList(Vec<Instance>);

impl Parse for InstanceList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let start = input.span();
            let args: syn::AngleBracketedGenericArguments = input.parse()?;
            out.push(Instance {
                args: args.args.into_iter().collect(),
                span: start,
            });
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(InstanceList(out))
    }
}

struct Product(Vec<Axis>);

impl Parse for Product {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut axes = Vec::new();
        while !input.is_empty() {
            let param: syn::Ident = input.parse()?;
            input.parse::<Token![in]>()?;
            let content;
            syn::bracketed!(content in input);
            let values = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
            if values.is_empty() {
                return Err(syn::Error::new(
                    param.span(),
                    format!("`{param} in []` builds nothing: list at least one value"),
                ));
            }
            axes.push(Axis {
                param,
                values: values.into_iter().collect(),
            });
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(Product(axes))
    }
}

impl Parse for KernelAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut attr = KernelAttr::default();
        while !input.is_empty() {
            if input.peek(Token![crate]) {
                input.parse::<Token![crate]>()?;
                input.parse::<Token![=]>()?;
                attr.krate = Some(input.parse()?);
            } else {
                let key: syn::Ident = input.parse()?;
                match key.to_string().as_str() {
                    "instances" => {
                        let content;
                        syn::parenthesized!(content in input);
                        if content.peek(syn::Ident) && content.peek2(Token![in]) {
                            attr.product = content.parse::<Product>()?.0;
                        } else {
                            attr.instances = content.parse::<InstanceList>()?.0;
                        }
                    }
                    "block" => {
                        input.parse::<Token![=]>()?;
                        let e: Expr = input.parse()?;
                        let dims = match e {
                            Expr::Tuple(t) => t.elems.into_iter().collect(),
                            Expr::Paren(p) => vec![*p.expr],
                            other => vec![other],
                        };
                        if dims.is_empty() || dims.len() > 3 {
                            return Err(syn::Error::new(key.span(), "`block` takes one to three dimensions: `block = 256` or `block = (32, 8, 1)`"));
                        }
                        attr.block = Some(dims);
                    }
                    "max_threads" => {
                        input.parse::<Token![=]>()?;
                        attr.max_threads = Some(input.parse()?);
                    }
                    "maxnreg" => {
                        input.parse::<Token![=]>()?;
                        attr.maxnreg = Some(input.parse()?);
                    }
                    "min_blocks" => {
                        input.parse::<Token![=]>()?;
                        attr.min_blocks = Some(input.parse()?);
                    }
                    "cluster" => {
                        input.parse::<Token![=]>()?;
                        let e: Expr = input.parse()?;
                        let at = crate::diag::range(&e);
                        let dims: Vec<Expr> = match e {
                            Expr::Array(a) => a.elems.into_iter().collect(),
                            Expr::Tuple(t) => t.elems.into_iter().collect(),
                            Expr::Paren(p) => vec![*p.expr],
                            other => vec![other],
                        };
                        if dims.is_empty() || dims.len() > 3 {
                            return Err(syn::Error::new(key.span(), "`cluster` takes one to three dimensions: `cluster = 2` or `cluster = [2, 1, 1]`"));
                        }
                        attr.cluster = Some((dims, at));
                    }
                    "needs" => {
                        input.parse::<Token![=]>()?;
                        let t: syn::Ident = input.parse()?;
                        attr.needs = Some(t.to_string().parse().map_err(
                            |e: kernel_dsl::target::TargetParseError| {
                                syn::Error::new(t.span(), e.to_string())
                            },
                        )?);
                    }
                    other => {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("unknown `#[kernel]` argument `{other}`: expected `instances(...)`, `block = ...`, `max_threads = ...`, `maxnreg = ...`, `min_blocks = ...`, `cluster = ...`, `needs = sm_90a` or `crate = path`"),
                        ))
                    }
                }
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(attr)
    }
}

/// Parses the attribute's tokens.
pub fn parse(tokens: TokenStream) -> DResult<KernelAttr> {
    Ok(syn::parse2::<KernelAttr>(tokens)?)
}

/// Checks that the instances match the function's generic parameters.
pub fn check_instances(attr: &KernelAttr, generics: &syn::Generics) -> DResult<()> {
    let params: Punctuated<&syn::GenericParam, Token![,]> = generics.params.iter().collect();
    let has_generics = !params.is_empty();
    if has_generics && attr.instances.is_empty() {
        return err(
            crate::diag::range(&generics),
            "a generic kernel needs the instances to build: `#[kernel(instances(<f32, 256>, ...))]`",
        );
    }
    if !has_generics && !attr.instances.is_empty() {
        return err(
            attr.instances[0].span,
            "`instances(...)` lists specializations, but this kernel has no generic parameters",
        );
    }
    for inst in &attr.instances {
        if inst.args.len() != params.len() {
            return err(
                inst.span,
                format!(
                    "this instance has {} generic argument(s), but the kernel declares {}",
                    inst.args.len(),
                    params.len()
                ),
            );
        }
    }
    Ok(())
}

/// Expands a cross product into its instances, in order (the last axis varies fastest).
/// Each axis names the next generic parameter; a const axis may use earlier ones
/// (`W in [1, T::VEC]`).
pub fn expand_product(attr: &mut KernelAttr, generics: &syn::Generics) -> DResult<()> {
    if attr.product.is_empty() {
        return Ok(());
    }
    let params: Vec<&syn::GenericParam> = generics.params.iter().collect();
    if attr.product.len() != params.len() {
        return err(
            attr.product[0].param.span(),
            format!(
                "the cross product has {} axes, but the kernel declares {} generic parameter(s): give one axis per parameter",
                attr.product.len(),
                params.len()
            ),
        );
    }
    let mut partial = vec![(
        Vec::<GenericArgument>::new(),
        crate::lower::Specialization::default(),
    )];
    for (axis, param) in attr.product.iter().zip(params) {
        let (name, is_type) = match param {
            syn::GenericParam::Type(t) => (&t.ident, true),
            syn::GenericParam::Const(c) => (&c.ident, false),
            syn::GenericParam::Lifetime(l) => {
                return err(
                    crate::diag::range(&l),
                    "kernels take no lifetime parameters",
                )
            }
        };
        if *name != axis.param {
            return err(
                axis.param.span(),
                format!("this axis names `{}`, but the next generic parameter is `{name}`: list the axes in the order the parameters are declared", axis.param),
            );
        }
        let mut next = Vec::new();
        for (args, spec) in &partial {
            for v in &axis.values {
                let mut args = args.clone();
                let mut spec = spec.clone();
                if let syn::GenericParam::Type(tp) = param {
                    if crate::instance::is_op_param(tp) {
                        let syn::Expr::Path(p) = v else {
                            return err(crate::diag::range(&v), format!("`{name}` is an op parameter: give types with a `#[device] impl`, such as `Silu`"));
                        };
                        let ty = syn::Type::Path(syn::TypePath {
                            qself: None,
                            path: p.path.clone(),
                        });
                        spec.ops
                            .insert(name.to_string(), crate::instance::op_type_name(&ty)?);
                        args.push(GenericArgument::Type(ty));
                        next.push((args, spec));
                        continue;
                    }
                }
                if is_type {
                    let syn::Expr::Path(p) = v else {
                        return err(
                            crate::diag::range(&v),
                            format!("`{name}` is a type parameter: give types such as `f32`"),
                        );
                    };
                    let ty: syn::Type = syn::Type::Path(syn::TypePath {
                        qself: None,
                        path: p.path.clone(),
                    });
                    let scalar = crate::dsl_type::scalar_of(&ty, &Default::default())?;
                    spec.types.insert(name.to_string(), scalar);
                    args.push(GenericArgument::Type(ty));
                } else {
                    let value = crate::instance::eval(v, &spec)?;
                    let syn::GenericParam::Const(c) = param else {
                        unreachable!("checked above")
                    };
                    let ty = crate::dsl_type::scalar_of(&c.ty, &Default::default())?;
                    spec.consts.insert(name.to_string(), (value, ty));
                    let lit = proc_macro2::Literal::i64_unsuffixed(value);
                    args.push(GenericArgument::Const(syn::parse_quote!(#lit)));
                }
                next.push((args, spec));
            }
        }
        partial = next;
    }
    let span = attr.product[0].param.span();
    attr.instances = partial
        .into_iter()
        .map(|(args, _)| Instance { args, span })
        .collect();
    Ok(())
}
