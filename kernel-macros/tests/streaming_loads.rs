//! `load_vec_streaming`: a vector load of data read once, which does not take a line in L1
//! (`ld.global.nc.L1::no_allocate`), so the lines a kernel reads again stay there. The
//! modifier needs PTX ISA 7.4, above sm_80's base version: the emitter raises `.version` for
//! it, and the emulator reads the same values as through `load_vec`.

mod common;

use kernel_dsl::{read_ptx_header, IsaVersion, Target};
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// `y[i] = w[i] · x[i % 4]` over vectors of 4, `w` read once and `x` by every thread.
#[kernel(crate = crate::common::paths)]
pub fn scaled_by_a_reused_row(w: &[f32], x: &[f32], y: &mut [f32], n: u32) {
    let i = 4 * (block_idx().x * block_dim().x + thread_idx().x);
    if i < n {
        let v = w.load_vec_streaming::<4>(i);
        let s = x.load_vec::<4>(0);
        let mut out = [0.0f32; 4];
        for j in 0..4 {
            out[j] = v[j] * s[j];
        }
        y.store_vec::<4>(i, out);
    }
}

#[test]
fn the_streaming_load_skips_l1_and_raises_the_ptx_version() {
    let emit = SCALED_BY_A_REUSED_ROW
        .emit
        .expect("the kernel embeds its IR");
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        let ptx = emit(target).unwrap();
        let ops: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|op| op.starts_with("ld.global"))
            .collect();
        assert_eq!(
            ops,
            ["ld.global.nc.L1::no_allocate.v4.f32", "ld.global.nc.v4.f32"],
            "{target}:\n{ptx}"
        );
        let version = read_ptx_header(&ptx).unwrap().version;
        assert!(version >= IsaVersion(7, 4), "{target}: .version {version}");
    }
}

#[test]
fn a_streaming_load_reads_what_a_plain_load_reads_on_the_emulator() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let w: Vec<f32> = (0..64).map(|i| i as f32 * 0.25 - 3.0).collect();
    let x = [2.0f32, -1.0, 0.5, 4.0];
    let wb = Buffer::from_host(&stream, &w)?;
    let xb = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::<f32>::zeros(&stream, 64)?;
    scaled_by_a_reused_row(
        &stream,
        LaunchConfig::for_elements(16, 8),
        &wb,
        &xb,
        &mut y,
        64,
    )?;
    let want: Vec<f32> = w.iter().enumerate().map(|(i, v)| v * x[i % 4]).collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}
