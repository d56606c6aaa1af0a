use kernel_macros::kernel;

#[kernel]
pub fn flip(x: &[u32], y: &mut [u32]) {
    let i = thread_idx().x;
    y[i] = -x[i];
}

fn main() {}
