//! Emits a lowered kernel for every target ptxkit knows and turns each outcome into tokens
//! gated on that target's cargo feature: a PTX entry where emission succeeds, a
//! `compile_error!` at the offending line where it does not. With no `sm_*` feature enabled
//! the crate builds for [`DEFAULT_TARGET`].

use crate::diag::Diag;
use crate::line_info::{self, Mode};
use crate::lower::Lowered;
use kernel_dsl::source_map::LineInfo;
use kernel_dsl::{catalog, emit, Target};
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The target a crate builds for when it enables no `sm_*` feature.
pub const DEFAULT_TARGET: Target = Target::DEFAULT_BUILD;

/// The outcome of emitting one kernel for one enabled target.
pub struct Emitted {
    /// The target whose feature enables this outcome.
    pub target: Target,
    /// The target the module is for: `target`, or its `a` variant for a kernel that
    /// `needs` it.
    pub module: Target,
    /// The PTX in the line-info form of [`Mode::primary`], or why there is none.
    pub ptx: Result<String, Diag>,
    /// In [`Mode::ByProfile`], the PTX with line info, which the crate takes instead of `ptx`
    /// where [`line_info::cfg_on`] holds.
    pub with_lines: Option<String>,
    /// For a capability error: the lowest target that runs the offending instruction.
    pub lowest: Option<Target>,
}

/// Emits `lowered` for every target, or, for a kernel that `needs` a target, for the targets
/// that can run it ([`module_for`]); the others are left out, with no error. Each is emitted in
/// the line-info forms `mode` asks for.
pub fn emit_all(
    lowered: &Lowered,
    fallback: crate::diag::SpanRange,
    needs: Option<Target>,
    mode: Mode,
) -> Vec<Emitted> {
    Target::ALL
        .iter()
        .filter_map(|&t| {
            let module = match needs {
                Some(n) => module_for(t, n)?,
                None => t,
            };
            let (ptx, lowest) = match emit_one(lowered, module, fallback, mode.primary()) {
                Ok(ptx) => (Ok(ptx), None),
                Err((d, lowest)) => (Err(d), lowest),
            };
            let with_lines = match (mode, &ptx) {
                (Mode::ByProfile, Ok(_)) => emit_one(lowered, module, fallback, LineInfo::On).ok(),
                _ => None,
            };
            Some(Emitted {
                target: t,
                module,
                ptx,
                with_lines,
                lowest,
            })
        })
        .collect()
}

/// The module an enabled `target` builds for a kernel that needs `needs`: an `a` target is
/// built where it or its SM's plain target is enabled (the runtime loads the `a` module on
/// that device); a plain one wherever the SM is at least its own.
pub fn module_for(target: Target, needs: Target) -> Option<Target> {
    if needs.is_arch_specific() {
        (target == needs || target.arch_specific_variant() == Some(needs)).then_some(needs)
    } else {
        (target.sm() >= needs.sm()).then_some(target)
    }
}

fn emit_one(
    lowered: &Lowered,
    target: Target,
    fallback: crate::diag::SpanRange,
    line_info: LineInfo,
) -> Result<String, (Diag, Option<Target>)> {
    // Capability first, against the spans the lowering recorded, so the error names the
    // user's line rather than the kernel as a whole.
    for (op, span) in &lowered.op_spans {
        let req = catalog::requirement(op);
        if catalog::refused(op, target) {
            let lowest = Target::ALL.into_iter().find(|t| req.admits(*t));
            return Err((
                Diag::new(
                    *span,
                    format!(
                        "`{}` needs {req}, but this crate builds for {target}",
                        op_name(op)
                    ),
                ),
                lowest,
            ));
        }
    }
    emit::emit_with(&lowered.kernel, target, line_info).map_err(|e| {
        let text = e.to_string();
        // The verifier names the barrier but not its place; the first barrier of that name is
        // where a kernel with one barrier (the usual case) went wrong.
        let span = lowered
            .op_spans
            .iter()
            .find(|(op, _)| op.is_cta_barrier() && text.contains(&format!("`{}`", op.mnemonic())))
            .map(|(_, s)| *s)
            .unwrap_or(fallback);
        (Diag::new(span, text), None)
    })
}

/// How an error names `op`: its mnemonic, and for a read of a cluster register (a `mov`, as
/// any special register's read) the register too.
fn op_name(op: &kernel_dsl::op::Op) -> String {
    match op {
        kernel_dsl::op::Op::ClusterReg => "mov.u32 %cluster_ctarank / %cluster_nctarank".into(),
        other => other.mnemonic(),
    }
}

/// `#[cfg(...)]` that holds when `target` is one the crate builds for.
pub fn cfg_for(target: Target) -> TokenStream {
    let feature = target.feature();
    if target == DEFAULT_TARGET {
        let all = Target::ALL.iter().map(|t| t.feature());
        quote!(#[cfg(any(feature = #feature, not(any(#(feature = #all),*))))])
    } else {
        quote!(#[cfg(feature = #feature)])
    }
}

/// The cfg of an emitted module: its target's, and for an `a` module built on behalf of the
/// plain target, only where the `a` target is not enabled itself (which embeds it once).
pub fn module_cfg(e: &Emitted) -> TokenStream {
    pair_cfg(e.target, e.module)
}

/// [`module_cfg`] for a module of `module` enabled by `target`.
pub fn pair_cfg(target: Target, module: Target) -> TokenStream {
    if module == target {
        return cfg_for(target);
    }
    let (plain, module) = (target.feature(), module.feature());
    quote!(#[cfg(all(feature = #plain, not(feature = #module)))])
}

/// The `Target::SmXX` path under `dsl`.
pub fn target_tokens(t: Target, dsl: &TokenStream) -> TokenStream {
    let v = syn::Ident::new(&format!("{t:?}"), Span::call_site());
    quote!(#dsl::Target::#v)
}

/// The array elements `(Target, "ptx")` for the targets that emitted, each behind its cfg
/// (and, where both line-info forms were emitted, behind the cfg that picks its form).
pub fn ptx_entries(emitted: &[Emitted], dsl: &TokenStream) -> TokenStream {
    let entries = emitted.iter().filter_map(|e| {
        let ptx = e.ptx.as_ref().ok()?;
        let cfg = module_cfg(e);
        let t = target_tokens(e.module, dsl);
        let entry = |text: &str, form: TokenStream| {
            let bytes = proc_macro2::Literal::byte_string(&kernel_dsl::artifact::deflate(text));
            quote!(#cfg #form (#t, #dsl::Ptx::Deflated(#bytes)),)
        };
        Some(match &e.with_lines {
            None => entry(ptx, TokenStream::new()),
            Some(lined) => {
                let mut both = entry(ptx, line_info::cfg_off());
                both.extend(entry(lined, line_info::cfg_on()));
                both
            }
        })
    });
    quote!(#(#entries)*)
}

/// `compile_error!`s for the targets that could not emit, each behind its cfg.
pub fn target_errors(emitted: &[Emitted]) -> TokenStream {
    let errs: Vec<TokenStream> = emitted.iter().filter_map(|e| {
        let d = e.ptx.as_ref().err()?;
        let t = e.target;
        let feature = t.feature();
        // Only a capability error depends on the target; others read the same for all.
        let capability = d.message.contains("but this crate builds for");
        let with_help = |help: String| {
            let mut d = d.clone();
            if capability {
                d.message = format!("{}\n  help: {help}", d.message);
            }
            d.to_compile_error()
        };
        // An instruction only newer targets have: the kernel may say so and be left out here.
        let needs = match e.lowest {
            Some(l) => format!(", or build this kernel only for the targets that run it: `#[kernel(needs = {l})]`"),
            None => String::new(),
        };
        let explicit = with_help(format!("remove the `{feature}` feature, or give this kernel a variant for {t}{needs}"));
        let mut out = quote!(#[cfg(feature = #feature)] #explicit);
        if t == DEFAULT_TARGET {
            let all = Target::ALL.iter().map(|t| t.feature());
            let default = with_help(format!(
                "this crate enables no `sm_*` feature, so it builds for {t}, the default: enable the targets you need, e.g. `--features sm_90`{needs}"
            ));
            out.extend(quote!(#[cfg(not(any(#(feature = #all),*)))] #default));
        }
        Some(out)
    }).collect();
    if errs.is_empty() {
        return TokenStream::new();
    }
    // A crate declares only the `sm_*` features it uses: the cfgs of the others are expected,
    // so the errors sit in an item that allows them (an attribute on the `compile_error!`
    // call itself would be read after its cfg).
    quote! {
        #[allow(unexpected_cfgs)]
        const _: () = { #(#errs)* };
    }
}

#[cfg(test)]
mod tests {
    use super::module_for;
    use kernel_dsl::Target::*;

    #[test]
    fn a_kernel_that_needs_an_a_target_builds_it_for_that_sm_only() {
        let built: Vec<_> = kernel_dsl::Target::ALL
            .iter()
            .filter_map(|&t| module_for(t, Sm90a).map(|m| (t, m)))
            .collect();
        assert_eq!(built, [(Sm90, Sm90a), (Sm90a, Sm90a)]);
    }

    #[test]
    fn a_kernel_that_needs_a_plain_target_builds_for_every_target_at_or_above_it() {
        assert_eq!(module_for(Sm89, Sm90), None);
        assert_eq!(module_for(Sm90, Sm90), Some(Sm90));
        assert_eq!(module_for(Sm120, Sm90), Some(Sm120));
    }
}
