//! Rust source lines on the GPU: a planted out-of-bounds store for
//! `compute-sanitizer --tool memcheck`, which names its Rust file and line where the binary
//! was built with line info (debug, or `--features line-info`; see docs/line-info.md).

use crate::common_tensor::*;
use kernel_runtime::{Buffer, LaunchConfig};

mod paths {
    pub use kernel_dsl as dsl;
    #[allow(unused_imports)]
    pub use kernel_macros::__kernel_expand;
    pub use kernel_runtime as runtime;
}

/// Stores one element past the end of `y` from its last thread: a planted bug.
#[kernel_macros::kernel(crate = self::paths)]
pub fn planted_out_of_bounds(y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i + 1] = 1.0;
    }
}

/// Runs only with `PTXKIT_PLANTED_BUG=1`, under compute-sanitizer: the store past the end
/// stays inside the allocation's rounding (60 floats of a 256-byte block), so the launch
/// itself succeeds, and memcheck, which checks the requested size, reports it.
#[test]
fn gpu_planted_out_of_bounds_store_for_compute_sanitizer() {
    if std::env::var_os("PTXKIT_PLANTED_BUG").is_none() {
        println!("skipping: set PTXKIT_PLANTED_BUG=1 and run under compute-sanitizer");
        return;
    }
    let Some(s) = gpu() else { return };
    let n = 60u32;
    let mut y = Buffer::from_host(&s, &vec![-1.0f32; n as usize]).unwrap();
    planted_out_of_bounds(&s, LaunchConfig::linear(1, 64), &mut y, n).unwrap();
    s.synchronize().unwrap();
    let got = y.to_host(&s).unwrap();
    assert_eq!(got[0], -1.0, "element 0 is never written");
    assert!(got[1..].iter().all(|&v| v == 1.0), "{got:?}");
    println!(
        "planted store: {}",
        PLANTED_OUT_OF_BOUNDS
            .kernel()
            .and_then(Result::ok)
            .map(|k| k.source.files.join(", "))
            .unwrap_or_default()
    );
}
