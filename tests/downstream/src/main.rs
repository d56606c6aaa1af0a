//! `downstream targets` prints the targets embedded in this build, one per line;
//! `downstream dump DIR` writes every embedded module to `DIR/<entry>@<target>.ptx`;
//! `downstream launch cuda|emulator` runs `saxpy` through its typed launcher and checks it;
//! `downstream emulator-target` prints the target `Device::emulator()` runs kernels as;
//! `downstream library-targets` prints, for the op library's kernels built at build time
//! (`#[kernel]` instances and the `kernels-gen` GEMMs), the targets with embedded PTX and then
//! those with embedded cubins (`cubin sm_89`), one per line.

mod kernels;

use ptxkit::dsl::KernelArtifacts;
use ptxkit::runtime::{Buffer, Device, LaunchConfig};

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
        Some("library-targets") => {
            let built: Vec<&KernelArtifacts> = ptxkit::kernels::all_kernels()
                .into_iter()
                .map(|k| k.artifacts())
                .collect();
            let mut ptx: Vec<_> = built.iter().flat_map(|k| k.embedded_targets()).collect();
            ptx.sort();
            ptx.dedup();
            for t in ptx {
                println!("{t}");
            }
            // A target counts for cubins only where every instance built for it has one (the
            // `wgmma` GEMMs, say, are built for sm_90a alone).
            for t in ptxkit::dsl::Target::ALL {
                let for_t: Vec<_> = built
                    .iter()
                    .filter(|k| k.embedded_targets().contains(&t))
                    .collect();
                if !for_t.is_empty() && for_t.iter().all(|k| k.cubin_for(t).is_some()) {
                    println!("cubin {t}");
                }
            }
        }
        Some("dump") => {
            let dir = std::path::PathBuf::from(args.get(2).expect("usage: downstream dump DIR"));
            std::fs::create_dir_all(&dir)?;
            for k in all() {
                for t in k.embedded_targets() {
                    if let Some(ptx) = k.ptx_for(t) {
                        std::fs::write(dir.join(format!("{}@{t}.ptx", k.meta.entry)), &*ptx)?;
                    }
                }
                for (t, cubin) in k.cubins.iter() {
                    std::fs::write(dir.join(format!("{}@{t}.cubin", k.meta.entry)), cubin)?;
                }
            }
        }
        Some("emulator-target") => println!("{}", Device::emulator().target()),
        Some("launch") => {
            let device = match args.get(2).map(String::as_str) {
                Some("cuda") => match Device::cuda(0) {
                    Ok(d) => d,
                    Err(e) => {
                        println!("skipping: no CUDA driver/GPU present ({e})");
                        return Ok(());
                    }
                },
                _ => Device::emulator_for(ptxkit::dsl::Target::Sm89),
            };
            if let Err(e) = launch_saxpy(&device) {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
        _ => eprintln!(
            "usage: downstream targets | downstream dump DIR | downstream launch cuda|emulator"
        ),
    }
    Ok(())
}

/// `y = 3·x + y` over an odd length through the generated launcher, checked element by element.
fn launch_saxpy(device: &Device) -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = 100_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25 - 7.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let stream = device.stream()?;
    let xd = Buffer::from_host(&stream, &x)?;
    let mut yd = Buffer::from_host(&stream, &y)?;
    kernels::saxpy(
        &stream,
        LaunchConfig::for_elements(n, 256),
        3.0,
        &xd,
        &mut yd,
        n,
    )?;
    let out = yd.to_host(&stream)?;
    let wrong = (0..n as usize)
        .filter(|&i| out[i] != 3.0f32.mul_add(x[i], y[i]) && out[i] != 3.0 * x[i] + y[i])
        .count();
    if wrong > 0 {
        return Err(format!("{wrong} of {n} elements differ from 3·x + y").into());
    }
    println!("saxpy: {n} elements correct on {}", device.props().name);
    Ok(())
}
