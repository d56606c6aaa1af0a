//! Forwards the enabled `sm_*` features to `#[kernel]`, which embeds a cubin for each of them
//! where ptxas is found (the PTX itself is gated on the features directly), and builds the
//! kernels still written with the builder (`kernels-gen`) for the same targets, embedding
//! their PTX, cubins and IR the same way.

use kernel_dsl::embed::Embedder;
use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;
use std::path::PathBuf;

fn main() {
    let names = kernel_dsl::build_env::forward();
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-changed=build.rs");

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
