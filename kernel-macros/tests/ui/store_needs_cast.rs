use kernel_macros::kernel;

#[kernel]
pub fn fill(y: &mut [f32], n: u32) {
    let i = thread_idx().x;
    y[i] = n;
}

fn main() {}
