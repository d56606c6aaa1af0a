// Forwards the enabled `sm_*` features to `#[kernel]`, which embeds a cubin for each of them
// where ptxas is found (the PTX itself is gated on the features directly).
fn main() {
    let mut targets: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_SM_")
                .map(|s| format!("sm_{}", s.to_lowercase()))
        })
        .collect();
    targets.sort();
    println!("cargo:rustc-env=PTXKIT_TARGETS={}", targets.join(","));
    println!("cargo:rerun-if-env-changed=PTXKIT_PTXAS");
}
