//! Finding libnccl before the first NCCL call: cudarc's dynamic loader panics where the
//! library is missing, so every entry point probes here first and returns a typed error.

use crate::error::{Error, Result};
use std::sync::OnceLock;

/// Checks that libnccl can be loaded, once per process.
///
/// ```
/// match kernel_runtime::nccl_available() {
///     Ok(()) => println!("NCCL found"),
///     Err(e) => println!("{e}"), // says how to install it
/// }
/// ```
pub fn nccl_available() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: probing dlopens libnccl by its usual names; loading it runs only the library's
    // own initialisers, as the first NCCL call would.
    let present = *PRESENT.get_or_init(|| unsafe { cudarc::nccl::sys::is_culib_present() });
    probe_result(present, &cudarc::get_lib_name_candidates("nccl"))
}

/// The probe's verdict: `Ok` where the library loaded, else the error listing the names tried.
pub(crate) fn probe_result(present: bool, candidates: &[String]) -> Result<()> {
    if present {
        return Ok(());
    }
    Err(Error::NcclMissing {
        searched: candidates.join(", "),
    })
}
