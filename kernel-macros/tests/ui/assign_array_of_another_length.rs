use kernel_macros::kernel;

#[kernel]
pub fn widen(x: &[u32], y: &mut [u32]) {
    let mut a = [0u32; 4];
    a = x.load_words::<2>(0);
    y[0] = a[0];
}

fn main() {}
