// Turns the enabled `sm_*` features into `PTXKIT_TARGETS` and the line-info choice into
// `PTXKIT_LINE_INFO`, which `#[kernel]` reads while this
// crate expands.
fn main() {
    let mut targets: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_SM_")
                .map(|s| format!("sm_{}", s.to_lowercase()))
        })
        .collect();
    targets.sort();
    println!("cargo:rustc-env=PTXKIT_TARGETS={}", targets.join(","));
    println!("cargo:rerun-if-changed=build.rs");
    // Rust source lines in the PTX (`#[kernel]` reads this): on with the `line-info` feature
    // or in a build with debug assertions; `PTXKIT_LINE_INFO=on|off` overrides both.
    let line_info = match std::env::var("PTXKIT_LINE_INFO").as_deref().map(str::trim) {
        Ok("on" | "1" | "true") => "on",
        Ok("off" | "0" | "false") => "off",
        _ if std::env::var_os("CARGO_FEATURE_LINE_INFO").is_some()
            || std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some() =>
        {
            "on"
        }
        _ => "off",
    };
    println!("cargo:rustc-env=PTXKIT_LINE_INFO={line_info}");
    println!("cargo:rerun-if-env-changed=PTXKIT_LINE_INFO");
}
