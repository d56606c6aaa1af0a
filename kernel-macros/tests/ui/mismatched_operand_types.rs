use kernel_macros::kernel;

#[kernel]
pub fn scale(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx().x;
    y[i] = x[i] * n;
}

fn main() {}
