//! Cubins beside the PTX, where ptxas is found at build time.
//!
//! A proc-macro cannot see the crate's cargo features, so cubins are built only for the
//! targets listed in `PTXKIT_TARGETS` (comma-separated, e.g. `sm_89,sm_121`), which the
//! crate's build script sets from its `CARGO_FEATURE_SM_*` variables; ptxas is looked up as
//! [`Ptxas::find`](kernel_dsl::ptxas::Ptxas::find) does for the build scripts (`PTXKIT_PTXAS`,
//! `CUDA_HOME/bin/ptxas`, `PATH`, then the project's `.tools` copy above the current
//! directory), so the `#[kernel]` kernels and the `kernels-gen` ones get cubins alike. Without
//! any of them, no cubins are embedded and the runtime loads PTX.

use kernel_dsl::Target;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets the build script announced, if any.
pub fn announced_targets() -> Vec<Target> {
    let Ok(list) = std::env::var("PTXKIT_TARGETS") else {
        return Vec::new();
    };
    list.split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// Where ptxas is, if anywhere: the one lookup of the build scripts.
pub fn find_ptxas() -> Option<PathBuf> {
    kernel_dsl::ptxas::Ptxas::find().map(|p| p.path)
}

/// Assembles `ptx` for `target`; `None` if ptxas fails (the runtime then loads the PTX).
pub fn assemble(ptxas: &Path, ptx: &str, target: Target, entry: &str) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!(
        "ptxkit-cubin-{}-{entry}-{target}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("k.ptx");
    let out = dir.join("k.cubin");
    std::fs::write(&src, ptx).ok()?;
    let mut command = Command::new(ptxas);
    command.arg(format!("-arch={}", target.name()));
    if kernel_dsl::source_map::has_line_info(ptx) {
        // Keeps the `.loc` table in the cubin for compute-sanitizer and Nsight Compute.
        command.arg("-lineinfo");
    }
    let status = command.arg(&src).arg("-o").arg(&out).output().ok()?;
    let bytes = if status.status.success() {
        std::fs::read(&out).ok()
    } else {
        None
    };
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}
