use kernel_macros::kernel;

#[kernel]
pub fn zero(y: &mut [f32], n: usize) {
    let i = thread_idx().x;
    y[i] = 0.0;
}

fn main() {}
