use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, LaunchConfig};

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

#[kernel(crate = crate::paths)]
pub fn scale(x: &[f32], y: &mut [f32], s: f32, n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = x[i] * s;
    }
}

fn main() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let x = Buffer::<f32>::zeros(&stream, 8)?;
    let y = Buffer::<f32>::zeros(&stream, 8)?;
    // `y.slice` is a read-only view: the output takes a `BufferViewMut` from `slice_mut`.
    scale(&stream, LaunchConfig::linear(1, 4), &x, &mut y.slice(0..4)?, 2.0, 4)?;
    Ok(())
}
