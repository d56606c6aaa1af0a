//! `downstream targets` prints the targets embedded in this build, one per line;
//! `downstream dump DIR` writes every embedded module to `DIR/<entry>@<target>.ptx`.

mod kernels;

use ptxkit::dsl::KernelArtifacts;

fn all() -> Vec<&'static KernelArtifacts> {
    let mut v = vec![&kernels::SAXPY];
    v.extend(kernels::SILU_ROWS_INSTANCES);
    v
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("targets") => {
            let mut targets: Vec<_> = all().iter().flat_map(|k| k.embedded_targets()).collect();
            targets.sort();
            targets.dedup();
            for t in targets {
                println!("{t}");
            }
        }
        Some("dump") => {
            let dir = std::path::PathBuf::from(args.get(2).expect("usage: downstream dump DIR"));
            std::fs::create_dir_all(&dir)?;
            for k in all() {
                for (t, ptx) in k.ptx.iter() {
                    std::fs::write(dir.join(format!("{}@{t}.ptx", k.meta.entry)), ptx)?;
                }
                for (t, cubin) in k.cubins.iter() {
                    std::fs::write(dir.join(format!("{}@{t}.cubin", k.meta.entry)), cubin)?;
                }
            }
        }
        _ => eprintln!("usage: downstream targets | downstream dump DIR"),
    }
    Ok(())
}
