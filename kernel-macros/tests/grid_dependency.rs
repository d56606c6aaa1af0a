//! The grid-dependency controls (`griddep_wait`, `griddep_launch_dependents`) in a kernel
//! built for every target: emitted on sm_90 and newer, left out below (where no launch is
//! programmatic), recorded in the kernel's metadata so the runtime knows it may launch the
//! kernel early, and run by the emulator as the plain kernel.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// `y = 2·x`, waiting for the grid before it first.
#[kernel(crate = crate::common::paths)]
pub fn doubled_after_prior_grid(x: &[f32], y: &mut [f32], n: u32) {
    griddep_wait();
    griddep_launch_dependents();
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = 2.0 * x[i];
    }
}

/// The same without the wait.
#[kernel(crate = crate::common::paths)]
pub fn doubled(x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = 2.0 * x[i];
    }
}

/// The module without its `.loc` lines.
fn code(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| !l.trim_start().starts_with(".loc"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_wait_is_recorded_in_the_metadata() {
    assert!(DOUBLED_AFTER_PRIOR_GRID.meta.waits_on_prior_grid);
    assert!(!DOUBLED.meta.waits_on_prior_grid);
}

#[test]
fn the_controls_are_emitted_from_sm_90_and_left_out_below() {
    let emit = DOUBLED_AFTER_PRIOR_GRID
        .emit
        .expect("the kernel embeds its IR");
    let plain = DOUBLED.emit.expect("the kernel embeds its IR");
    for target in [Target::Sm80, Target::Sm89] {
        let ptx = emit(target).unwrap();
        assert!(!ptx.contains("griddepcontrol"), "{target}:\n{ptx}");
        // Nothing else changes: the same module as the kernel without the controls, but for
        // the entry's name and the source lines.
        assert_eq!(
            code(&ptx.replace("doubled_after_prior_grid", "doubled")),
            code(&plain(target).unwrap()),
            "{target}"
        );
    }
    for target in [Target::Sm90, Target::Sm90a] {
        let ptx = emit(target).unwrap();
        assert!(ptx.contains("griddepcontrol.wait;"), "{target}:\n{ptx}");
        assert!(
            ptx.contains("griddepcontrol.launch_dependents;"),
            "{target}:\n{ptx}"
        );
    }
}

#[test]
fn a_kernel_that_waits_runs_on_the_emulator() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..100).map(|i| i as f32 - 40.5).collect();
    let xb = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::<f32>::zeros(&stream, 100)?;
    doubled_after_prior_grid(
        &stream,
        LaunchConfig::for_elements(100, 32),
        &xb,
        &mut y,
        100,
    )?;
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}
