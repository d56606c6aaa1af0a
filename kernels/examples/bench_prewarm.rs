//! How long the op library takes to be ready on a GPU: the time from process start to the
//! first op's launch done, then pre-warming every library kernel (the `#[kernel]` instances
//! and the `kernels-gen` tables, all built at build time: PTX and cubins embedded, so nothing
//! is emitted at run time and, for the GPU's own target, nothing JIT-compiled). Run it with
//! the driver's JIT cache off, or a second run finds any JIT result cached:
//!
//! ```text
//! FEATURES=sm_90 PACKAGES=kernels ONLY=bench_prewarm bash scripts/gpu-suite.sh
//! CUDA_CACHE_DISABLE=1 .gpu/bench-kernels-bench_prewarm     # on the GPU machine
//! ```

use kernel_runtime::{Buffer, Device, ModuleOrigin};
use std::error::Error;
use std::time::Instant;

fn main() -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let device = Device::cuda(0)?;
    let stream = device.stream()?;
    let x = Buffer::from_host(&stream, &[1.0f32; 1024])?;
    let gamma = Buffer::from_host(&stream, &[1.0f32; 1024])?;
    let mut y = Buffer::<f32>::zeros(&stream, 1024)?;
    kernels::norm::rms_norm(&stream, &x, &gamma, &mut y, 1, 1024, 1e-5)?;
    device.synchronize()?;
    let first = start.elapsed();
    println!("device: {}", device.props().name);
    println!(
        "process start to the first op's launch done (rms_norm): {:.1} ms",
        first.as_secs_f64() * 1e3
    );

    let all = kernels::all_kernels();
    println!("| kernels | count | load (ms) | from cubin | JIT from PTX |");
    println!("|---|---|---|---|---|");
    let artifacts: Vec<_> = all.iter().map(|k| k.artifacts()).collect();
    let t = Instant::now();
    let loaded = device.prewarm(&artifacts)?;
    let load = t.elapsed();
    let cubins = loaded
        .iter()
        .filter(|m| m.origin == ModuleOrigin::EmbeddedCubin)
        .count();
    println!(
        "| built at build time | {} | {:.1} | {cubins} | {} |",
        all.len(),
        load.as_secs_f64() * 1e3,
        loaded.len() - cubins
    );
    Ok(())
}
