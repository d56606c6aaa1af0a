use kernel_macros::kernel;

pub trait Activation {
    fn apply(v: f32) -> f32;
}

pub struct Gelu;

impl Activation for Gelu {
    fn apply(v: f32) -> f32 {
        v
    }
}

#[kernel(instances(A in [Gelu]))]
pub fn activate<A: Activation>(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = A::apply(x[i]);
}

fn main() {}
