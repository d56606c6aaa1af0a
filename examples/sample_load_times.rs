//! Module load time of each builder sample on a GPU: PTX (JIT-compiled by the driver) against a
//! cubin assembled beforehand by ptxas. The driver's on-disk JIT cache is disabled, each load
//! goes to a fresh module cache, and the median of several loads is reported.
//!
//! `PTXKIT_PTXAS=/usr/local/cuda/bin/ptxas cargo run --release --example sample_load_times`

use ptxkit::dsl::ptxas::Ptxas;
use ptxkit::dsl::{samples, KernelArtifacts};
use ptxkit::runtime::{Device, ModuleOrigin};
use std::borrow::Cow;
use std::time::Instant;

const REPS: usize = 7;

fn median_load_ms(
    artifacts: &'static KernelArtifacts,
    expect: ModuleOrigin,
) -> Result<f64, String> {
    let mut times = Vec::new();
    for _ in 0..REPS {
        let device = Device::cuda(0).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let info = device.prewarm(&[artifacts]).map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        if info[0].origin != expect {
            return Err(format!(
                "loaded from {:?}, expected {expect:?}",
                info[0].origin
            ));
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[REPS / 2])
}

fn main() {
    std::env::set_var("CUDA_CACHE_DISABLE", "1");
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("skipping: no CUDA driver/GPU present ({e})");
            return;
        }
    };
    let Some(ptxas) = Ptxas::find() else {
        eprintln!("ptxas not found: set PTXKIT_PTXAS");
        std::process::exit(2);
    };
    let plain = device.target();
    println!(
        "device: {} ({plain}); ptxas {}",
        device.props().name,
        ptxas.version().unwrap_or_default()
    );
    println!("| sample | target | PTX bytes | PTX JIT load (ms) | cubin load (ms) | ratio |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for s in samples::all() {
        let with_ptx = KernelArtifacts::from_kernel(&s.kernel);
        let target = [plain, plain.arch_specific_variant().unwrap_or(plain)]
            .into_iter()
            .find(|t| with_ptx.ptx_for(*t).is_some());
        let Some(target) = target else { continue };
        let ptx = with_ptx.ptx_for(target).expect("checked above");
        let cubin: &'static [u8] = match ptxas.assemble(&ptx) {
            Ok(a) => Box::leak(a.cubin.into_boxed_slice()),
            Err(e) => {
                println!("| {} | {target} | ptxas failed: {e} |", s.kernel.name);
                continue;
            }
        };
        let mut with_cubin = with_ptx.clone();
        with_cubin.cubins = Cow::Owned(vec![(target, cubin)]);
        let (with_ptx, with_cubin): (&'static KernelArtifacts, &'static KernelArtifacts) = (
            Box::leak(Box::new(with_ptx)),
            Box::leak(Box::new(with_cubin)),
        );
        let jit = median_load_ms(with_ptx, ModuleOrigin::EmbeddedPtx);
        let bin = median_load_ms(with_cubin, ModuleOrigin::EmbeddedCubin);
        match (jit, bin) {
            (Ok(j), Ok(c)) => println!(
                "| {} | {target} | {} | {j:.3} | {c:.3} | {:.0}x |",
                s.kernel.name,
                ptx.len(),
                j / c
            ),
            (j, c) => println!(
                "| {} | {target} | {} | {j:?} | {c:?} | |",
                s.kernel.name,
                ptx.len()
            ),
        }
    }
}
