//! Forwards the enabled `sm_*` features to `#[kernel]`, which embeds a cubin for each of them
//! where ptxas is found (the PTX itself is gated on the features directly), and builds the
//! kernels still written with the builder (`kernels-gen`) for the same targets, embedding
//! their PTX, cubins and IR the same way.

use kernel_dsl::embed::Embedder;
use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;
use std::path::PathBuf;

fn main() {
    let mut names: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_SM_")
                .map(|s| format!("sm_{}", s.to_lowercase()))
        })
        .collect();
    names.sort();
    println!("cargo:rustc-env=PTXKIT_TARGETS={}", names.join(","));
    println!("cargo:rerun-if-env-changed=PTXKIT_PTXAS");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
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

    let mut targets: Vec<Target> = names.iter().filter_map(|n| n.parse().ok()).collect();
    if targets.is_empty() {
        targets.push(Target::DEFAULT_BUILD);
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut embedder = Embedder::new(&out, &targets, Ptxas::find());
    for table in kernels_gen::library() {
        if let Err(e) = embedder.table("pub(crate)", table.name, &table.kernels) {
            panic!("building the {} kernels failed: {e}", table.name);
        }
    }
    for w in embedder.warnings() {
        println!("cargo:warning={w}");
    }
    if let Err(e) = embedder.finish("builder_kernels.rs") {
        panic!("{e}");
    }
}
