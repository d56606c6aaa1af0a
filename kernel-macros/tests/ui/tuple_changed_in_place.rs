use kernel_macros::kernel;

#[kernel]
pub fn running_max(x: &[f32], y: &mut [f32]) {
    let mut best = (x[0], 0u32);
    y[0] = best.0;
}

fn main() {}
