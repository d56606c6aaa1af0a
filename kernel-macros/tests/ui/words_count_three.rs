use kernel_macros::kernel;

#[kernel]
pub fn three_words(x: &[bf16], y: &mut [u32]) {
    let i = thread_idx().x;
    let w = x.load_words::<3>(i * 6);
    y[i] = w[0];
}

fn main() {}
