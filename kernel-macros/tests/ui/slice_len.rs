use kernel_macros::kernel;

#[kernel]
pub fn bounded(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    if i < x.len() {
        y[i] = x[i];
    }
}

fn main() {}
