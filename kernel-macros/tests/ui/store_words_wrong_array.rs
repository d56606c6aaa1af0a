use kernel_macros::kernel;

#[kernel]
pub fn short_array(x: &[bf16], y: &mut [bf16]) {
    let i = thread_idx().x * 8;
    let w = x.load_words::<2>(i);
    y.store_words::<4>(i, w);
}

#[kernel]
pub fn float_words(y: &mut [bf16]) {
    let i = thread_idx().x * 4;
    y.store_words::<2>(i, [1.0f32, 2.0f32]);
}

fn main() {}
