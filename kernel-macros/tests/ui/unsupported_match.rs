use kernel_macros::kernel;

#[kernel]
pub fn pick(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx().x;
    y[i] = match n {
        0 => x[i],
        _ => 0.0,
    };
}

fn main() {}
