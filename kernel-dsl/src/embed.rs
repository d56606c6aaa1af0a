//! Build-time embedding of kernels written with the [`builder`](crate::builder): a build
//! script hands [`Embedder`] tables of kernels, and it emits each kernel's PTX for the enabled
//! targets, assembles cubins where ptxas is found, writes both and the packed IR beside the
//! build's other outputs, and writes Rust source declaring one `static` array of
//! [`KernelArtifacts`](crate::KernelArtifacts) per table. The crate `include!`s that source,
//! so its builder kernels ship exactly as `#[kernel]` instances do and nothing is emitted at
//! run time for an enabled target.
//!
//! ```no_run
//! // build.rs
//! use kernel_dsl::{embed::Embedder, ptxas::Ptxas, samples, Target};
//! let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
//! let mut e = Embedder::new(&out, &[Target::Sm80, Target::Sm90], Ptxas::find());
//! e.table("pub(crate)", "SAMPLES", &[samples::vector_add()]).unwrap();
//! e.finish("samples.rs").unwrap();
//! // lib.rs: include!(concat!(env!("OUT_DIR"), "/samples.rs"));
//! ```
//!
//! A kernel that needs an architecture-specific instruction (`wgmma`, say) is built for the
//! `a` variant of an enabled target (sm_90 → sm_90a), which is what the runtime loads on that
//! device; a kernel no enabled target can run is left out of `ptx`, and the runtime emits it
//! from the embedded IR if a device asks for it.

use crate::artifact::{BlockContract, KernelMeta, ParamKind};
use crate::error::Error;
use crate::ir::Kernel;
use crate::ptxas::Ptxas;
use crate::target::Target;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Collects tables of kernels and writes the Rust source that embeds them.
pub struct Embedder {
    dir: PathBuf,
    out_dir: PathBuf,
    targets: Vec<Target>,
    ptxas: Option<Ptxas>,
    source: String,
    warnings: Vec<String>,
}

impl Embedder {
    /// Files go under `out_dir/kernels/`; `targets` are the enabled ones.
    pub fn new(out_dir: &Path, targets: &[Target], ptxas: Option<Ptxas>) -> Embedder {
        let mut targets = targets.to_vec();
        targets.sort();
        targets.dedup();
        Embedder {
            dir: out_dir.join("kernels"),
            out_dir: out_dir.to_path_buf(),
            targets,
            ptxas,
            source: String::from(
                "// Written by kernel_dsl::embed::Embedder from a build script; do not edit.\n",
            ),
            warnings: Vec::new(),
        }
    }

    /// What went wrong that did not stop the build (a module ptxas refused, whose PTX is
    /// embedded without a cubin). A build script prints these as `cargo:warning=` lines.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Declares `{vis} static {name}: [KernelArtifacts; N]`, entry `i` built from `kernels[i]`.
    /// Kernels are emitted and assembled on all available cores.
    pub fn table(&mut self, vis: &str, name: &str, kernels: &[Kernel]) -> Result<(), Error> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let built = self.build_all(kernels)?;
        let _ = writeln!(
            self.source,
            "#[allow(unexpected_cfgs)]\n{vis} static {name}: [::kernel_dsl::KernelArtifacts; {}] = [",
            kernels.len()
        );
        for (i, (kernel, outputs)) in kernels.iter().zip(built).enumerate() {
            let entry = &kernel.name;
            let ir = self.dir.join(format!("{entry}.ir"));
            std::fs::write(&ir, kernel.to_packed()).map_err(|e| io(&ir, e))?;
            let mut ptx = String::new();
            let mut cubins = String::new();
            for b in outputs {
                let t = b.target;
                // The text beside the deflated bytes the crate embeds, for people to read.
                let file = self.dir.join(format!("{entry}.{}.ptx", t.name()));
                std::fs::write(&file, &b.ptx).map_err(|e| io(&file, e))?;
                let file = self.dir.join(format!("{entry}.{}.ptx.deflate", t.name()));
                std::fs::write(&file, crate::artifact::deflate(&b.ptx))
                    .map_err(|e| io(&file, e))?;
                let _ = write!(
                    ptx,
                    "(::kernel_dsl::Target::{t:?}, ::kernel_dsl::Ptx::Deflated(include_bytes!({:?}))),",
                    file.display().to_string()
                );
                match b.cubin {
                    Some(Ok(bytes)) => {
                        let file = self.dir.join(format!("{entry}.{}.cubin", t.name()));
                        std::fs::write(&file, bytes).map_err(|e| io(&file, e))?;
                        let _ = write!(
                            cubins,
                            "(::kernel_dsl::Target::{t:?}, include_bytes!({:?})),",
                            file.display().to_string()
                        );
                    }
                    Some(Err(e)) => self.warnings.push(format!(
                        "{entry} for {t}: no cubin, the PTX is embedded alone ({e})"
                    )),
                    None => {}
                }
            }
            let _ = writeln!(
                self.source,
                "    ::kernel_dsl::KernelArtifacts {{\n        meta: {},\n        ptx: ::std::borrow::Cow::Borrowed(&[{ptx}]),\n        cubins: ::std::borrow::Cow::Borrowed(&[{cubins}]),\n        emit: ::core::option::Option::Some({{\n            fn emit_for(target: ::kernel_dsl::Target) -> ::core::result::Result<::std::string::String, ::kernel_dsl::Error> {{\n                let kernel = ::kernel_dsl::ir::Kernel::from_packed({name}[{i}].ir.unwrap_or_default())?;\n                ::kernel_dsl::emit::emit(&kernel, target)\n            }}\n            emit_for\n        }}),\n        ir: ::core::option::Option::Some(include_bytes!({:?})),\n    }},",
                meta_source(&KernelMeta::from_kernel(kernel)),
                ir.display().to_string()
            );
        }
        self.source.push_str("];\n");
        Ok(())
    }

    /// Writes the source to `out_dir/file_name` and returns its path.
    pub fn finish(self, file_name: &str) -> Result<PathBuf, Error> {
        let path = self.out_dir.join(file_name);
        std::fs::write(&path, &self.source).map_err(|e| io(&path, e))?;
        Ok(path)
    }

    /// Every kernel's outputs, in `kernels` order, the kernels spread over the available
    /// cores.
    fn build_all(&self, kernels: &[Kernel]) -> Result<Vec<Vec<BuiltModule>>, Error> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let next = AtomicUsize::new(0);
        let mut done: Vec<(usize, Result<Vec<BuiltModule>, Error>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers.min(kernels.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(kernel) = kernels.get(i) else {
                                break mine;
                            };
                            mine.push((i, self.build_one(kernel)));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    }

    /// One kernel for every enabled target it can run on.
    fn build_one(&self, kernel: &Kernel) -> Result<Vec<BuiltModule>, Error> {
        let mut out: Vec<BuiltModule> = Vec::new();
        for &t in &self.targets {
            let (target, ptx) = match crate::emit::emit(kernel, t) {
                Ok(ptx) => (t, ptx),
                Err(Error::BeyondTarget { .. }) => {
                    match t.arch_specific_variant().filter(|v| *v != t) {
                        Some(v) => match crate::emit::emit(kernel, v) {
                            Ok(ptx) => (v, ptx),
                            Err(Error::BeyondTarget { .. }) => continue,
                            Err(e) => return Err(e),
                        },
                        None => continue,
                    }
                }
                Err(e) => return Err(e),
            };
            if out.iter().any(|b| b.target == target) {
                continue;
            }
            let cubin = self.ptxas.as_ref().map(|p| p.cubin(&ptx));
            out.push(BuiltModule { target, ptx, cubin });
        }
        Ok(out)
    }
}

/// One kernel's outputs for one target; the cubin is `None` without ptxas and an error where
/// ptxas refused the module.
struct BuiltModule {
    target: Target,
    ptx: String,
    cubin: Option<Result<Vec<u8>, Error>>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Ptxas {
        detail: format!("could not write {}: {e}", path.display()),
    }
}

/// `meta` as a Rust constant expression.
fn meta_source(meta: &KernelMeta) -> String {
    let params: String = meta
        .params
        .iter()
        .map(|p| {
            let kind = match p.kind {
                ParamKind::Scalar(t) => format!("::kernel_dsl::ParamKind::Scalar(::kernel_dsl::ScalarType::{t:?})"),
                ParamKind::Slice { elem, mutable } => format!(
                    "::kernel_dsl::ParamKind::Slice {{ elem: ::kernel_dsl::ScalarType::{elem:?}, mutable: {mutable} }}"
                ),
                ParamKind::TensorMap => "::kernel_dsl::ParamKind::TensorMap".to_string(),
            };
            format!(
                "::kernel_dsl::ParamMeta {{ name: ::std::borrow::Cow::Borrowed({:?}), kind: {kind} }},",
                p.name
            )
        })
        .collect();
    let block = match meta.block {
        BlockContract::Any => "::kernel_dsl::BlockContract::Any".to_string(),
        BlockContract::Exactly([x, y, z]) => {
            format!("::kernel_dsl::BlockContract::Exactly([{x}, {y}, {z}])")
        }
        BlockContract::AtMost(n) => format!("::kernel_dsl::BlockContract::AtMost({n})"),
    };
    format!(
        "::kernel_dsl::KernelMeta {{ entry: ::std::borrow::Cow::Borrowed({:?}), params: ::std::borrow::Cow::Borrowed(&[{params}]), block: {block}, static_shared_bytes: {}, uses_dynamic_shared: {}, min_dynamic_shared_bytes: {}, waits_on_prior_grid: {}, cluster: {:?} }}",
        meta.entry, meta.static_shared_bytes, meta.uses_dynamic_shared, meta.min_dynamic_shared_bytes, meta.waits_on_prior_grid, meta.cluster
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples;

    #[test]
    fn a_table_embeds_ptx_for_the_enabled_targets_and_the_ir() {
        let dir = std::env::temp_dir().join(format!("ptxkit-embed-{}", std::process::id()));
        let mut e = Embedder::new(&dir, &[Target::Sm89, Target::Sm80], None);
        e.table(
            "pub",
            "T",
            &[samples::vector_add(), samples::mma_bf16_16x8x16()],
        )
        .unwrap();
        let src = std::fs::read_to_string(e.finish("t.rs").unwrap()).unwrap();
        assert!(src.contains("pub static T: [::kernel_dsl::KernelArtifacts; 2]"));
        assert!(
            src.contains("::kernel_dsl::Target::Sm80, ::kernel_dsl::Ptx::Deflated(include_bytes!")
        );
        assert!(
            src.contains("::kernel_dsl::Target::Sm89, ::kernel_dsl::Ptx::Deflated(include_bytes!")
        );
        assert!(src.contains("entry: ::std::borrow::Cow::Borrowed(\"vector_add\")"));
        let ptx = std::fs::read_to_string(dir.join("kernels/vector_add.sm_89.ptx")).unwrap();
        assert!(ptx.contains(".target sm_89"));
        let ir = std::fs::read(dir.join("kernels/vector_add.ir")).unwrap();
        assert_eq!(Kernel::from_packed(&ir).unwrap().name, "vector_add");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_kernel_beyond_a_target_is_built_for_its_arch_specific_variant_or_left_out() {
        let e = Embedder::new(Path::new("."), &[Target::Sm80, Target::Sm90], None);
        let wgmma = samples::wgmma_bf16_64x8x16();
        let built = e.build_one(&wgmma).unwrap();
        let targets: Vec<Target> = built.iter().map(|b| b.target).collect();
        assert_eq!(targets, vec![Target::Sm90a]);
        assert!(built[0].ptx.contains(".target sm_90a"));
    }
}
