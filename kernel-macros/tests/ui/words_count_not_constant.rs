use kernel_macros::kernel;

#[kernel]
pub fn runtime_words(x: &[bf16], y: &mut [u32], n: u32) {
    let i = thread_idx().x;
    let w = x.load_words::<n>(i * 8);
    y[i] = w[0];
}

fn main() {}
