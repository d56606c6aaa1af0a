use kernel_macros::kernel;

#[kernel]
pub fn gather(y: &mut [f32]) {
    let acc = [0.0f32; 4];
    let i = thread_idx().x;
    y[i] = acc[i];
}

fn main() {}
