use kernel_macros::kernel;

#[kernel(threads = 256)]
pub fn copy(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = x[i];
}

fn main() {}
