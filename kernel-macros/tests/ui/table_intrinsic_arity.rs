use kernel_macros::kernel;

#[kernel]
pub fn reciprocal(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = rcp_rn(x[i], 1.0);
}

fn main() {}
