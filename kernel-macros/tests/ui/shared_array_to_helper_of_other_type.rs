use kernel_macros::{device, kernel};

#[allow(unused_imports)]
mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_macros::__kernel_expand;
    pub use kernel_runtime as runtime;
}

#[device(crate = crate::paths)]
fn first(tile: &[f32]) -> f32 {
    tile[0]
}

#[kernel(crate = crate::paths)]
pub fn mismatch(y: &mut [f32]) {
    let tile = shared_array::<u32, 32>();
    y[0] = first(tile);
}

fn main() {}
