//! The one error type of kernel-dsl.

use crate::target::{IsaVersion, Target};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error(
        "`{instruction}` needs {need}, but the module is emitted for {target}\n  help: {help}"
    )]
    BeyondTarget {
        instruction: String,
        need: String,
        target: Target,
        help: String,
    },
    #[error("this PTX module is for {module}, but the device runs {device}: load the module emitted for {device} (enable the `{}` feature) instead", device.feature())]
    TargetMismatch { module: Target, device: Target },
    #[error("PTX ISA {version} is older than {target} accepts (it needs {min} or newer): re-emit the module for {target}")]
    IsaTooOld {
        version: IsaVersion,
        target: Target,
        min: IsaVersion,
    },
    #[error("malformed PTX header: {detail}")]
    MalformedHeader { detail: String },
    #[error("{detail}\n  help: install ptxas with `scripts/install-ptxas.sh`, or point PTXKIT_PTXAS at one")]
    Ptxas { detail: String },
    #[error("kernel `{kernel}` is ill-formed: {detail}")]
    Verify { kernel: String, detail: String },
}
