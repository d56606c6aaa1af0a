use kernel_macros::kernel;

#[kernel]
pub fn copy(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = x[j];
}

fn main() {}
