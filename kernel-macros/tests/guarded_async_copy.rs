//! `cp_async_16_or` (a 16-byte `cp.async` that zero-fills where its condition fails) and
//! shared arrays passed to `#[device]` helpers, on the emulator and in the emitted PTX.

mod common;

use kernel_macros::{device, kernel};
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// Copies chunk `t` of four words into `tile`, or zeros where `t >= live`; the source index
/// of a dead chunk is past the buffer, which a guarded copy never reads.
#[device(crate = crate::common::paths)]
fn stage_chunk(tile: &mut [u32], x: &[u32], t: u32, live: u32) {
    cp_async_16_or(tile, 4 * t, x, 4 * t + 1000 * (t / live), t < live);
}

/// Reads word `i` of `tile` through a helper.
#[device(crate = crate::common::paths)]
fn word(tile: &[u32], i: u32) -> u32 {
    tile[i]
}

#[kernel(crate = crate::common::paths, block = 8)]
pub fn guarded_stage(x: &[u32], y: &mut [u32], live: u32) {
    let tile = shared_array::<u32, 32>();
    let t = thread_idx().x;
    // Poison first, so a zero in the output was written by the copy.
    for q in 0..4 {
        tile[4 * t + q] = 7;
    }
    sync_threads();
    stage_chunk(tile, x, t, live);
    cp_async_commit();
    cp_async_wait(0);
    sync_threads();
    for q in 0..4 {
        y[4 * t + q] = word(tile, 4 * t + q);
    }
}

#[test]
fn a_guarded_async_copy_zero_fills_and_reads_nothing_where_its_condition_fails() -> Result<(), Error>
{
    let stream = Device::emulator().stream()?;
    let x: Vec<u32> = (1..=32).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [8, 1, 1],
        dynamic_shared_bytes: 0,
    };
    for live in [8u32, 5, 1] {
        let mut y = Buffer::from_host(&stream, &[u32::MAX; 32])?;
        guarded_stage(&stream, cfg, &dx, &mut y, live)?;
        let want: Vec<u32> = (0..32u32)
            .map(|i| if i / 4 < live { i + 1 } else { 0 })
            .collect();
        assert_eq!(y.to_host(&stream)?, want, "{live} live chunks");
    }
    let ptx = GUARDED_STAGE
        .ptx_for(kernel_dsl::Target::Sm80)
        .expect("sm_80 PTX");
    assert!(ptx.contains("cp.async.cg.shared.global"), "{ptx}");
    assert!(
        ptx.contains(", 16, %r"),
        "the source size is a register: {ptx}"
    );
    Ok(())
}
