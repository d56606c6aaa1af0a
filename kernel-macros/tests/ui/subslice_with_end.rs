use kernel_macros::kernel;

#[kernel]
pub fn window(x: &[f32], y: &mut [f32]) {
    let w = &x[2..6];
    y[0] = w[0];
}

fn main() {}
