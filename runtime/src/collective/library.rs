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
    let present = *PRESENT.get_or_init(|| {
        connect_at_init();
        // SAFETY: probing dlopens libnccl by its usual names; loading it runs only the
        // library's own initialisers, as the first NCCL call would.
        unsafe { cudarc::nccl::sys::is_culib_present() }
    });
    probe_result(present, &cudarc::get_lib_name_candidates("nccl"))
}

/// NCCL connects its peers lazily, on the first collective of each kind; inside a stream
/// capture that first call cannot allocate or connect and fails (`ncclInternalError`). Our
/// communicators connect when they are made instead, unless the user set the variable.
fn connect_at_init() {
    const VAR: &str = "NCCL_RUNTIME_CONNECT";
    if std::env::var_os(VAR).is_none() {
        std::env::set_var(VAR, "0");
    }
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
