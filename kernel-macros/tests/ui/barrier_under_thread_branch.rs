use kernel_macros::kernel;

#[kernel]
pub fn stage(x: &[f32], y: &mut [f32]) {
    let t = thread_idx().x;
    if t < 16 {
        sync_threads();
    }
    y[t] = x[t];
}

fn main() {}
