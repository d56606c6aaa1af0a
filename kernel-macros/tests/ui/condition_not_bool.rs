use kernel_macros::kernel;

#[kernel]
pub fn guard(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx().x;
    if n {
        y[i] = x[i];
    }
}

fn main() {}
