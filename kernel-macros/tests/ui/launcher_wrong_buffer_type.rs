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
    let x = Buffer::<u32>::zeros(&stream, 4)?;
    let mut y = Buffer::<f32>::zeros(&stream, 4)?;
    // `x` holds u32 but the kernel reads f32: the launcher does not accept it.
    scale(&stream, LaunchConfig::linear(1, 4), &x, &mut y, 2.0, 4)?;
    Ok(())
}
