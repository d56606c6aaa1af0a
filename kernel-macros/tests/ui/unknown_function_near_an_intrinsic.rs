use kernel_macros::{device, kernel};

#[device]
fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + tanh(0.7978846 * (x + 0.044715 * x * x * x)))
}

#[kernel]
pub fn act(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = gelu_tahn(sqrtt(x[i]));
}

fn main() {}
