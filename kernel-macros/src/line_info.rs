//! Whether a crate's kernels carry their Rust source lines in PTX.
//!
//! A proc-macro sees neither the crate's profile nor its features, so the choice reaches it in
//! one of two ways:
//!
//! - A build script decides (on with the crate's `line-info` feature or in a build with debug
//!   assertions; `PTXKIT_LINE_INFO=on|off` in the environment overrides both) and passes
//!   `cargo:rustc-env=PTXKIT_LINE_INFO=on|off`. The macro then emits that one form
//!   (`kernels/build.rs`, `tests/downstream/build.rs`).
//! - Without a build script, the macro emits both forms and the generated items choose with
//!   `#[cfg(any(debug_assertions, feature = "line-info"))]`, so a debug build carries line
//!   info and a release build does not unless the crate's `line-info` feature is on. Only the
//!   chosen form reaches the binary.

use proc_macro2::TokenStream;
use quote::quote;

/// What the macro emits for each target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One form, as the build script said.
    Fixed(kernel_dsl::source_map::LineInfo),
    /// Both forms, chosen in the crate by [`cfg_on`].
    ByProfile,
}

impl Mode {
    /// The mode the crate being expanded asked for.
    pub fn current() -> Mode {
        use kernel_dsl::source_map::LineInfo;
        match std::env::var("PTXKIT_LINE_INFO").as_deref().map(str::trim) {
            Ok("on" | "1" | "true") => Mode::Fixed(LineInfo::On),
            Ok("off" | "0" | "false") => Mode::Fixed(LineInfo::Off),
            _ => Mode::ByProfile,
        }
    }

    /// Whether lowering records source locations (needless when they are never printed).
    pub fn records_lines(self) -> bool {
        self != Mode::Fixed(kernel_dsl::source_map::LineInfo::Off)
    }

    /// The form of the primary PTX: the one form, or in [`Mode::ByProfile`] the one without
    /// lines (the other is emitted beside it).
    pub fn primary(self) -> kernel_dsl::source_map::LineInfo {
        match self {
            Mode::Fixed(l) => l,
            Mode::ByProfile => kernel_dsl::source_map::LineInfo::Off,
        }
    }

    /// An expression of type `LineInfo` for the emit function the generated static holds.
    pub fn runtime_choice(self, dsl: &TokenStream) -> TokenStream {
        let li = quote!(#dsl::source_map::LineInfo);
        match self {
            Mode::Fixed(kernel_dsl::source_map::LineInfo::On) => quote!(#li::On),
            Mode::Fixed(kernel_dsl::source_map::LineInfo::Off) => quote!(#li::Off),
            Mode::ByProfile => {
                quote!(if ::core::cfg!(any(debug_assertions, feature = "line-info")) { #li::On } else { #li::Off })
            }
        }
    }
}

/// The condition under which a crate without a build script carries line info.
pub fn cfg_on() -> TokenStream {
    quote!(#[cfg(any(debug_assertions, feature = "line-info"))])
}

/// The opposite of [`cfg_on`].
pub fn cfg_off() -> TokenStream {
    quote!(#[cfg(not(any(debug_assertions, feature = "line-info")))])
}
