use kernel_macros::kernel;

#[kernel]
pub fn clear(x: &[f32], n: u32) {
    let i = thread_idx().x;
    if i < n {
        x[i] = 0.0;
    }
}

fn main() {}
