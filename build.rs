// Hands the enabled `sm_*` features (`PTXKIT_TARGETS`) and the line-info choice
// (`PTXKIT_LINE_INFO`) to `#[kernel]`, which reads them while this crate expands.
fn main() {
    kernel_dsl::build_env::forward();
    println!("cargo:rerun-if-changed=build.rs");
}
