use kernel_macros::kernel;

#[kernel]
pub fn rotate(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = shfl_xor(x[i]);
}

fn main() {}
