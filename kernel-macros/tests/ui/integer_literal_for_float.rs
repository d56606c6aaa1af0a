use kernel_macros::kernel;

#[kernel]
pub fn ones(y: &mut [f32]) {
    y[thread_idx().x] = 1;
}

fn main() {}
