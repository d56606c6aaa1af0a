use crate::args::DeviceChoice;
use crate::error::CliError;
use ptxkit::runtime::Device;
use ptxkit::selfcheck::{self, Scale};

/// Runs every sample on the chosen device (the GPU if one is present, else the CPU emulator)
/// against its CPU reference and prints a table. Fails if any sample misses its tolerance.
pub fn run(device_choice: DeviceChoice) -> Result<(), CliError> {
    let device = pick_device(device_choice)?;
    print_device(&device);
    let results = selfcheck::run_all(&device, Scale::for_device(&device), 2026)?;
    println!(
        "{:<20} {:<34} {:>12} {:>10} {:>9}  result",
        "kernel", "shape", "max rel err", "tolerance", "ms"
    );
    let mut failed = 0;
    for r in &results {
        let verdict = match (&r.skipped, r.passed()) {
            (Some(why), _) => format!("skipped: {why}"),
            (None, true) => "ok".to_string(),
            (None, false) => {
                failed += 1;
                "FAILED".to_string()
            }
        };
        println!(
            "{:<20} {:<34} {:>12.3e} {:>10.1e} {:>9.2}  {verdict}",
            r.kernel, r.shape, r.max_rel_error, r.tolerance, r.millis
        );
    }
    if failed > 0 {
        return Err(CliError::SamplesFailed(failed));
    }
    Ok(())
}

/// The device `--device` names: `best` (the default: the GPU if one is present, else the CPU
/// emulator), `cuda` (an error where there is no GPU) or `emulator`.
pub fn pick_device(choice: DeviceChoice) -> Result<Device, CliError> {
    match choice {
        DeviceChoice::Best => Ok(Device::best()),
        DeviceChoice::Emulator => Ok(Device::emulator()),
        DeviceChoice::Cuda => Ok(Device::cuda(0)?),
    }
}

/// The first line both `run` and `train` print: which device runs the kernels.
pub(crate) fn print_device(device: &Device) {
    let props = device.props();
    println!(
        "device: {} ({:?}, {})",
        props.name,
        props.kind,
        device.target()
    );
}
