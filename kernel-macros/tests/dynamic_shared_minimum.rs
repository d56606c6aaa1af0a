//! `dynamic_shared::<T, N>()`: the fewest elements a kernel indexes travel in its metadata, and
//! a launch giving fewer bytes is refused before anything runs.

mod common;

use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// Reverses 64 values through dynamic shared memory.
#[kernel(crate = crate::common::paths, block = 64)]
pub fn reverse_through_dynamic_shared(x: &[f32], y: &mut [f32]) {
    let tile = dynamic_shared::<f32, 64>();
    let t = thread_idx().x;
    tile[t] = x[t];
    sync_threads();
    y[t] = tile[63 - t];
}

/// Declares no count: one element is the least it can index.
#[kernel(crate = crate::common::paths, block = 64)]
pub fn first_word_of_dynamic_shared(y: &mut [u32]) {
    let words = dynamic_shared::<u32>();
    words[0] = 7;
    y[0] = words[0];
}

#[test]
fn dynamic_shared_with_a_count_refuses_launches_giving_fewer_bytes() -> Result<(), Error> {
    assert_eq!(
        REVERSE_THROUGH_DYNAMIC_SHARED.meta.min_dynamic_shared_bytes,
        256
    );
    assert_eq!(
        FIRST_WORD_OF_DYNAMIC_SHARED.meta.min_dynamic_shared_bytes,
        4
    );
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 + 1.0).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 64])?;
    let short = LaunchConfig::linear(1, 64).with_dynamic_shared(128);
    let err = reverse_through_dynamic_shared(&stream, short, &dx, &mut y).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DynamicSharedTooSmall {
                bytes: 128,
                min: 256,
                ..
            }
        ),
        "{err}"
    );
    assert!(y.to_host(&stream)?.iter().all(|v| v.is_nan()));
    let enough = LaunchConfig::linear(1, 64).with_dynamic_shared(256);
    reverse_through_dynamic_shared(&stream, enough, &dx, &mut y)?;
    let want: Vec<f32> = x.iter().rev().copied().collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}
