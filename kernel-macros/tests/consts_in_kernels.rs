//! `const` items declared inside a kernel, or above it marked `#[device]`: immutable bindings
//! of kernel types, usable like `let` bindings, with the literal checks of `let`.

mod common;

use kernel_macros::{device, kernel};
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// Added to every output; also a host constant.
#[device(crate = crate::common::paths)]
const OFFSET: f32 = 1.5;

#[kernel(crate = crate::common::paths)]
pub fn scale_and_shift(x: &[f32], y: &mut [f32], bits: &mut [u32]) {
    const SCALE: f32 = 0.5;
    const SHIFT: u32 = 3;
    const ON: bool = true;
    let i = thread_idx().x;
    if ON {
        y[i] = SCALE * x[i] + OFFSET;
    }
    bits[i] = i << SHIFT;
}

#[test]
fn consts_declared_in_a_kernel_hold_their_values() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..32).map(|i| i as f32 + 0.25).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 32])?;
    let mut bits = Buffer::from_host(&stream, &[u32::MAX; 32])?;
    scale_and_shift(&stream, LaunchConfig::linear(1, 32), &dx, &mut y, &mut bits)?;
    let want: Vec<f32> = x.iter().map(|v| 0.5 * v + OFFSET).collect();
    assert_eq!(y.to_host(&stream)?, want);
    let want_bits: Vec<u32> = (0..32).map(|i| i << 3).collect();
    assert_eq!(bits.to_host(&stream)?, want_bits);
    Ok(())
}
