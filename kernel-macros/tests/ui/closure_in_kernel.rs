use kernel_macros::kernel;

#[kernel]
pub fn twice(x: &[f32], y: &mut [f32]) {
    let double = |v: f32| v * 2.0;
    y[0] = double(x[0]);
}

fn main() {}
