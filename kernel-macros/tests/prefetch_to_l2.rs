//! `prefetch_l2`: a global line asked for in L2 ahead of its load, emitted as
//! `prefetch.global.L2` on every target (the form is older than any the catalog knows), and
//! skipped by the emulator, where the kernel computes what it computes without it.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// `y = x + 1`, each thread first asking for the line `ahead` elements past its own (past
/// the end, the last element's).
#[kernel(crate = crate::common::paths)]
pub fn incremented_after_prefetch(x: &[f32], y: &mut [f32], n: u32, ahead: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        prefetch_l2(x, min(i + ahead, n - 1));
        y[i] = x[i] + 1.0;
    }
}

#[test]
fn the_prefetch_is_emitted_on_every_target() {
    let emit = INCREMENTED_AFTER_PREFETCH
        .emit
        .expect("the kernel embeds its IR");
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        let ptx = emit(target).unwrap();
        let prefetches: Vec<&str> = ptx
            .lines()
            .map(str::trim)
            .filter(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some("prefetch.global.L2")
                    && words.next().is_some_and(|a| a.starts_with("[%rd"))
            })
            .collect();
        assert_eq!(prefetches.len(), 1, "{target}:\n{ptx}");
    }
}

#[test]
fn a_kernel_that_prefetches_runs_on_the_emulator() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..100).map(|i| i as f32 * 0.5 - 20.0).collect();
    let xb = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::<f32>::zeros(&stream, 100)?;
    incremented_after_prefetch(
        &stream,
        LaunchConfig::for_elements(100, 32),
        &xb,
        &mut y,
        100,
        64,
    )?;
    let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}
