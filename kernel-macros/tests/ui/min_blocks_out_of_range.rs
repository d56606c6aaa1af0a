use kernel_macros::kernel;

#[kernel(block = 64, min_blocks = 40)]
pub fn crowded(y: &mut [f32]) {
    y[thread_idx().x] = 1.0;
}

fn main() {}
