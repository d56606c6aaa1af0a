use kernel_macros::kernel;

#[kernel]
pub fn tail(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx().x * 4;
    let v = x.load_vec_or::<4>(i, n - i, 0.0);
    y.store_vec::<4>(i, v);
}

fn main() {}
