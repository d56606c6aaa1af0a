use kernel_macros::kernel;

#[kernel]
pub fn halve(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = x[i] >> 1;
}

fn main() {}
