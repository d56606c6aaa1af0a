use kernel_macros::kernel;

#[kernel]
pub fn scale(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = 2.0 * x[i];
}

#[kernel]
pub fn scale_twice(x: &[f32], y: &mut [f32]) {
    scale(x, y);
    scale(x, y);
}

fn main() {}
