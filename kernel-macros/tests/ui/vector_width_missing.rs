use kernel_macros::kernel;

#[kernel]
pub fn unsized_vector(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x * 4;
    let v = x.load_vec(i);
    y.store4(i, v);
}

fn main() {}
