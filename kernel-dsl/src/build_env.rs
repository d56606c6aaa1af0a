//! What a crate's build script tells `#[kernel]` while the crate expands: the enabled `sm_*`
//! targets (`PTXKIT_TARGETS`, for cubins) and whether PTX carries Rust source lines
//! (`PTXKIT_LINE_INFO`). The workspace's build scripts call [`forward`]; a user's crate can
//! too, or print the same two variables itself (see `tests/downstream/build.rs`).

/// Prints the `cargo:` lines that hand the enabled targets and the line-info choice to
/// `#[kernel]`, and returns the targets' names (`sm_90`, sorted).
///
/// Line info is on with the crate's `line-info` feature or in a build with debug assertions;
/// `PTXKIT_LINE_INFO=on|off` overrides both.
pub fn forward() -> Vec<String> {
    let mut targets: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_SM_")
                .map(|s| format!("sm_{}", s.to_lowercase()))
        })
        .collect();
    targets.sort();
    println!("cargo:rustc-env=PTXKIT_TARGETS={}", targets.join(","));
    println!("cargo:rustc-env=PTXKIT_LINE_INFO={}", line_info());
    println!("cargo:rerun-if-env-changed=PTXKIT_LINE_INFO");
    println!("cargo:rerun-if-env-changed=PTXKIT_PTXAS");
    targets
}

fn line_info() -> &'static str {
    let feature = std::env::var_os("CARGO_FEATURE_LINE_INFO").is_some();
    let debug = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    choose(
        std::env::var("PTXKIT_LINE_INFO").ok().as_deref(),
        feature || debug,
    )
}

/// An explicit `on`/`off` wins; otherwise the build's own default.
fn choose(explicit: Option<&str>, default_on: bool) -> &'static str {
    match explicit.map(str::trim) {
        Some("on" | "1" | "true") => "on",
        Some("off" | "0" | "false") => "off",
        _ if default_on => "on",
        _ => "off",
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn an_explicit_choice_wins_over_the_build_default() {
        assert_eq!(choose(Some("off"), true), "off");
        assert_eq!(choose(Some(" on "), false), "on");
        assert_eq!(choose(None, true), "on");
        assert_eq!(choose(Some("maybe"), false), "off");
    }
}
