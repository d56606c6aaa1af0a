//! Which module of a kernel a device loads: the exact target's cubin, else its PTX, else the
//! `a` variant's (for kernels that only exist as sm_90a / sm_100a), else PTX emitted for the
//! exact target, else an error naming the feature to enable. Every PTX text passes the parity
//! check here, before anything reaches a driver, and the module's cache key is derived here
//! and nowhere else.

use crate::cubin::{cubin_target, CubinArch};
use crate::error::{Error, Result};
use kernel_dsl::{check_ptx_parity, KernelArtifacts, ModuleKey, Target};
use std::borrow::Cow;

/// Where a loaded module came from.
///
/// ```
/// use kernel_runtime::ModuleOrigin;
/// assert_ne!(ModuleOrigin::EmbeddedCubin, ModuleOrigin::Emitted);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModuleOrigin {
    /// A cubin embedded at build time (no JIT at load).
    EmbeddedCubin,
    /// PTX embedded at build time (JIT-compiled by the driver at load).
    EmbeddedPtx,
    /// PTX emitted at run time from the kernel's IR for a target it was not built for.
    Emitted,
}

/// The bytes a backend loads.
#[derive(Clone, Debug)]
pub(crate) enum ModuleImage {
    Cubin(&'static [u8]),
    Ptx(Cow<'static, str>),
}

/// The outcome of selection: what to load, for which target, under which key.
#[derive(Clone, Debug)]
pub(crate) struct Selected {
    pub key: ModuleKey,
    pub target: Target,
    pub image: ModuleImage,
    pub origin: ModuleOrigin,
}

/// Picks the module `artifacts` loads as on a device running `device`. `runs_cubins` is false
/// for the emulator, which executes PTX only.
pub(crate) fn select(
    artifacts: &KernelArtifacts,
    device: Target,
    runs_cubins: bool,
) -> Result<Selected> {
    let kernel = artifacts.meta.entry.as_ref();
    let variant = device.arch_specific_variant().filter(|v| *v != device);
    for target in std::iter::once(device).chain(variant) {
        if runs_cubins {
            if let Some(cubin) = artifacts.cubin_for(target) {
                check_cubin(kernel, target, cubin)?;
                return Ok(Selected {
                    key: ModuleKey::of(target, cubin),
                    target,
                    image: ModuleImage::Cubin(cubin),
                    origin: ModuleOrigin::EmbeddedCubin,
                });
            }
        }
        if let Some(ptx) = artifacts.ptx_for(target) {
            return ptx_module(kernel, target, ptx, ModuleOrigin::EmbeddedPtx);
        }
    }
    let Some(emit) = artifacts.emit else {
        return Err(no_module(artifacts, device));
    };
    let emitted = {
        let _emit = tracing::debug_span!(target: "ptxkit::emit", "emit", kernel, target = %device)
            .entered();
        emit(device)
    };
    match emitted {
        Ok(ptx) => {
            tracing::warn!(
                "kernel `{kernel}`: emitting PTX for {device}, which the build did not embed; enable the `{}` feature to build it in",
                device.feature()
            );
            ptx_module(kernel, device, Cow::Owned(ptx), ModuleOrigin::Emitted)
        }
        // A kernel that needs an arch-specific instruction can only exist as the `a` variant.
        Err(kernel_dsl::Error::BeyondTarget { .. }) if variant.is_some() => {
            let target = variant.unwrap_or(device);
            let _emit =
                tracing::debug_span!(target: "ptxkit::emit", "emit", kernel, target = %target)
                    .entered();
            let ptx = emit(target).map_err(|source| Error::Emit {
                kernel: kernel.to_string(),
                target,
                source,
            })?;
            tracing::warn!(
                "kernel `{kernel}`: emitting PTX for {target}, which the build did not embed; enable the `{}` feature to build it in",
                target.feature()
            );
            ptx_module(kernel, target, Cow::Owned(ptx), ModuleOrigin::Emitted)
        }
        Err(source) => Err(beyond_device(kernel, device, source)),
    }
}

/// An emission error as the launch reports it: an instruction the device lacks is the
/// device's shortfall (the crate's features have nothing to do with it), anything else an
/// emission failure.
fn beyond_device(kernel: &str, device: Target, source: kernel_dsl::Error) -> Error {
    match source {
        kernel_dsl::Error::BeyondTarget {
            instruction, need, ..
        } => Error::BeyondDevice {
            kernel: kernel.to_string(),
            device,
            instruction,
            need,
        },
        source => Error::Emit {
            kernel: kernel.to_string(),
            target: device,
            source,
        },
    }
}

/// The cubin counterpart of the PTX parity check: a cubin filed under `target` must say so in
/// its ELF header (an sm_80 cubin would otherwise load silently on an sm_86 device).
fn check_cubin(kernel: &str, target: Target, cubin: &[u8]) -> Result<()> {
    let refuse = |detail: String| Error::CubinTarget {
        kernel: kernel.to_string(),
        target,
        detail,
    };
    match cubin_target(cubin).map_err(refuse)? {
        Some(arch) if arch.admits(target) => Ok(()),
        Some(CubinArch::Exact(actual) | CubinArch::PlainOrArchSpecific(actual)) => {
            Err(refuse(format!("was built for {actual}")))
        }
        None => {
            tracing::warn!("kernel `{kernel}`: cannot read the target of its {target} cubin (unknown ELF ABI); loading it as {target}");
            Ok(())
        }
    }
}

fn ptx_module(
    kernel: &str,
    target: Target,
    ptx: Cow<'static, str>,
    origin: ModuleOrigin,
) -> Result<Selected> {
    check_ptx_parity(&ptx, target).map_err(|source| Error::Parity {
        kernel: kernel.to_string(),
        source,
    })?;
    Ok(Selected {
        key: ModuleKey::of(target, ptx.as_bytes()),
        target,
        image: ModuleImage::Ptx(ptx),
        origin,
    })
}

fn no_module(artifacts: &KernelArtifacts, device: Target) -> Error {
    // Where the IR is at hand, a kernel the device cannot run says so instead of asking for a
    // feature that would not help.
    if let Some(Ok(ir)) = artifacts.kernel() {
        if let Err(e @ kernel_dsl::Error::BeyondTarget { .. }) = kernel_dsl::emit::emit(&ir, device)
        {
            return beyond_device(&artifacts.meta.entry, device, e);
        }
    }
    let mut embedded = artifacts.embedded_targets();
    embedded.extend(artifacts.cubins.iter().map(|(t, _)| *t));
    embedded.sort();
    embedded.dedup();
    Error::NoModuleForTarget {
        kernel: artifacts.meta.entry.to_string(),
        target: device,
        embedded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{artifacts_with, VECTOR_ADD_SM80, VECTOR_ADD_SM90, VECTOR_ADD_SM90A};

    const CUBIN: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90.cubin");
    const CUBIN_SM80: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_80.cubin");

    #[test]
    fn an_embedded_cubin_wins_over_ptx_for_the_same_target() {
        let a = artifacts_with(
            &[(Target::Sm90, VECTOR_ADD_SM90)],
            &[(Target::Sm90, CUBIN)],
            None,
        );
        let s = select(a, Target::Sm90, true).unwrap();
        assert_eq!(s.origin, ModuleOrigin::EmbeddedCubin);
        assert_eq!(s.key, ModuleKey::of(Target::Sm90, CUBIN));
    }

    #[test]
    fn the_emulator_ignores_cubins_and_takes_ptx() {
        let a = artifacts_with(
            &[(Target::Sm90, VECTOR_ADD_SM90)],
            &[(Target::Sm90, CUBIN)],
            None,
        );
        let s = select(a, Target::Sm90, false).unwrap();
        assert_eq!(s.origin, ModuleOrigin::EmbeddedPtx);
        assert_eq!(
            s.key,
            ModuleKey::of(Target::Sm90, VECTOR_ADD_SM90.as_bytes())
        );
    }

    #[test]
    fn a_cubin_for_another_target_is_never_chosen() {
        let a = artifacts_with(
            &[(Target::Sm80, VECTOR_ADD_SM80)],
            &[(Target::Sm80, CUBIN_SM80)],
            None,
        );
        let err = select(a, Target::Sm90, true).unwrap_err();
        assert!(
            matches!(
                err,
                Error::NoModuleForTarget {
                    target: Target::Sm90,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn ptx_is_taken_for_the_exact_target_only() {
        let a = artifacts_with(
            &[
                (Target::Sm80, VECTOR_ADD_SM80),
                (Target::Sm90, VECTOR_ADD_SM90),
            ],
            &[],
            None,
        );
        assert_eq!(select(a, Target::Sm80, true).unwrap().target, Target::Sm80);
        assert_eq!(select(a, Target::Sm90, true).unwrap().target, Target::Sm90);
    }

    #[test]
    fn a_kernel_embedded_only_as_sm90a_loads_on_sm90_as_that_variant() {
        let a = artifacts_with(&[(Target::Sm90a, VECTOR_ADD_SM90A)], &[], None);
        let s = select(a, Target::Sm90, true).unwrap();
        assert_eq!(s.target, Target::Sm90a);
        assert_eq!(s.key.target, Target::Sm90a);
    }

    fn emit_for_any(target: Target) -> std::result::Result<String, kernel_dsl::Error> {
        Ok(VECTOR_ADD_SM80
            .replace("sm_80", target.name())
            .replace("7.0", "8.0"))
    }

    fn emit_needs_sm90a(target: Target) -> std::result::Result<String, kernel_dsl::Error> {
        if target == Target::Sm90a {
            return Ok(VECTOR_ADD_SM90A.to_string());
        }
        Err(kernel_dsl::Error::BeyondTarget {
            instruction: "wgmma.mma_async".into(),
            need: "sm_90a".into(),
            target,
            help: "enable sm_90a".into(),
        })
    }

    fn emit_wrong_target(_: Target) -> std::result::Result<String, kernel_dsl::Error> {
        Ok(VECTOR_ADD_SM80.to_string())
    }

    #[test]
    fn without_an_embedded_module_the_kernel_is_emitted_for_the_exact_target() {
        let a = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], Some(emit_for_any));
        let s = select(a, Target::Sm89, true).unwrap();
        assert_eq!(s.origin, ModuleOrigin::Emitted);
        assert_eq!(s.target, Target::Sm89);
        let ModuleImage::Ptx(text) = &s.image else {
            panic!("emitted module must be PTX")
        };
        assert!(text.contains(".target sm_89"));
        assert_eq!(s.key, ModuleKey::of(Target::Sm89, text.as_bytes()));
    }

    #[test]
    fn emission_falls_back_to_the_arch_specific_variant_when_the_kernel_needs_it() {
        let a = artifacts_with(&[], &[], Some(emit_needs_sm90a));
        assert_eq!(select(a, Target::Sm90, true).unwrap().target, Target::Sm90a);
        let err = select(a, Target::Sm80, true).unwrap_err();
        assert!(
            matches!(
                err,
                Error::BeyondDevice {
                    device: Target::Sm80,
                    ..
                }
            ),
            "{err}"
        );
    }

    fn emit_mma_bf16(target: Target) -> std::result::Result<String, kernel_dsl::Error> {
        kernel_dsl::emit::emit(&kernel_dsl::samples::mma_bf16_16x8x16(), target)
    }

    #[test]
    fn a_bf16_kernel_on_an_sm70_device_names_the_sm_it_needs_not_a_feature() {
        let a = artifacts_with(&[], &[], Some(emit_mma_bf16));
        let err = select(a, Target::Sm70, true).unwrap_err();
        match &err {
            Error::BeyondDevice {
                device,
                instruction,
                need,
                ..
            } => {
                assert_eq!(*device, Target::Sm70);
                assert!(instruction.contains("bf16"), "{instruction}");
                assert!(need.starts_with("sm_80 or newer"), "{need}");
            }
            other => panic!("expected BeyondDevice, got {other}"),
        }
        let msg = err.to_string();
        assert!(!msg.contains("feature"), "{msg}");
        assert!(msg.contains("sm_70 device"), "{msg}");
    }

    #[test]
    fn without_module_or_emitter_the_error_names_the_feature_to_enable() {
        let a = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
        let msg = select(a, Target::Sm90, true).unwrap_err().to_string();
        assert!(msg.contains("enable the `sm_90` feature"), "{msg}");
        assert!(msg.contains("built for sm_80"), "{msg}");
    }

    #[test]
    fn embedded_ptx_whose_target_line_lies_is_refused() {
        // Filed under sm_90 but says `.target sm_80` inside.
        let a = artifacts_with(&[(Target::Sm90, VECTOR_ADD_SM80)], &[], None);
        let err = select(a, Target::Sm90, true).unwrap_err();
        assert!(matches!(err, Error::Parity { .. }), "{err}");
        assert!(err.to_string().contains("sm_80"), "{err}");
    }

    #[test]
    fn a_cubin_filed_under_another_target_is_refused() {
        let a = artifacts_with(&[], &[(Target::Sm86, CUBIN_SM80)], None);
        let err = select(a, Target::Sm86, true).unwrap_err();
        assert!(
            matches!(
                err,
                Error::CubinTarget {
                    target: Target::Sm86,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("sm_80"), "{err}");
        let junk = artifacts_with(&[], &[(Target::Sm90, b"not a cubin")], None);
        assert!(matches!(
            select(junk, Target::Sm90, true),
            Err(Error::CubinTarget { .. })
        ));
    }

    #[test]
    fn emitted_ptx_for_the_wrong_target_is_refused() {
        let a = artifacts_with(&[], &[], Some(emit_wrong_target));
        let err = select(a, Target::Sm90, true).unwrap_err();
        assert!(matches!(err, Error::Parity { .. }), "{err}");
    }
}
