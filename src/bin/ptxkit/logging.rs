//! The binary's log subscriber: the libraries emit through `tracing` and install nothing.
//! `RUST_LOG` picks what is shown (warnings by default); `RUST_LOG=ptxkit=debug` shows each
//! module load (`ptxkit::load`), PTX emitted at run time (`ptxkit::emit`), JIT compilation
//! (`ptxkit::jit`) and launch (`ptxkit::launch`), each span closing with its duration.

use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::FmtSpan;

/// Installs the subscriber, writing to stderr so stdout keeps only the report.
pub fn init() {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .from_env_lossy();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
