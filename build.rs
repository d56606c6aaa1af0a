// Turns the enabled `sm_*` features into `PTXKIT_TARGETS`, which `#[kernel]` reads while this
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
}
