use kernel_macros::kernel;

#[kernel]
pub fn wrap(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = x[i] % 2.0;
}

fn main() {}
