use kernel_macros::kernel;

#[kernel(min_blocks = 2)]
pub fn resident(y: &mut [f32]) {
    y[thread_idx().x] = 1.0;
}

fn main() {}
