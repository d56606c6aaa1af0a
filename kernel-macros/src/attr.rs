//! The arguments of `#[kernel(...)]`:
//!
//! - `instances(<f32, 256>, <bf16, 256>)`: the specializations to build, one generic argument
//!   list per instance, in the order of the function's generic parameters;
//! - `block = 256` or `block = (32, 8, 1)`: the exact block shape the kernel requires
//!   (`.reqntid`); the values may name const parameters;
//! - `max_threads = 256`: an upper bound on the block's threads instead (`.maxntid`);
//! - `maxnreg = 64`: at most this many registers per thread (`.maxnreg`), so that more
//!   threads fit on an SM;
//! - `min_blocks = 2`: ptxas keeps registers low enough for this many blocks per SM
//!   (`.minnctapersm`); needs `block` or `max_threads`, since the bound counts threads;
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

#[derive(Clone, Default)]
pub struct KernelAttr {
    pub instances: Vec<Instance>,
    pub block: Option<Vec<Expr>>,
    /// `max_threads = N`: at most N threads per block (`.maxntid N, 1, 1`).
    pub max_threads: Option<Expr>,
    /// `maxnreg = N`: at most N registers per thread (`.maxnreg N`).
    pub maxnreg: Option<Expr>,
    /// `min_blocks = N`: at least N resident blocks per SM (`.minnctapersm N`).
    pub min_blocks: Option<Expr>,
    pub krate: Option<syn::Path>,
}

impl KernelAttr {
    /// Whether anything beyond `crate = path` was given (all a `#[device]` may take).
    pub fn has_kernel_arguments(&self) -> bool {
        !self.instances.is_empty()
            || self.block.is_some()
            || self.max_threads.is_some()
            || self.maxnreg.is_some()
            || self.min_blocks.is_some()
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
                        attr.instances = content.parse::<InstanceList>()?.0;
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
                    other => {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("unknown `#[kernel]` argument `{other}`: expected `instances(...)`, `block = ...`, `max_threads = ...`, `maxnreg = ...`, `min_blocks = ...` or `crate = path`"),
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
