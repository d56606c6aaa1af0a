use kernel_macros::kernel;

#[kernel]
pub fn pair(x: &[f32], y: &mut [f32]) {
    let p = (x[0], x[1]);
    y[0] = p.2;
}

fn main() {}
