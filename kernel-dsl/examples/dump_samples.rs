//! Writes every sample's PTX for every target it supports into a folder:
//! `cargo run -p kernel-dsl --example dump_samples -- OUT_DIR`.
use kernel_dsl::{emit, samples, Target};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/samples".into());
    std::fs::create_dir_all(&dir).expect("create output folder");
    for s in samples::all() {
        for t in Target::ALL {
            match emit::emit(&s.kernel, t) {
                Ok(ptx) => {
                    std::fs::write(format!("{dir}/{}@{t}.ptx", s.kernel.name), ptx).expect("write")
                }
                Err(e) => println!("{}@{t}: {e}", s.kernel.name),
            }
        }
    }
}
