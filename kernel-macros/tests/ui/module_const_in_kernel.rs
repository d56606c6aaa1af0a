use kernel_macros::kernel;

const SCALE: f32 = 0.5;

#[kernel]
pub fn halve(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = SCALE * x[i];
}

fn main() {}
