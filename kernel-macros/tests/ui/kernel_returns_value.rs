use kernel_macros::kernel;

#[kernel]
pub fn total(x: &[f32]) -> f32 {
    x[0]
}

fn main() {}
