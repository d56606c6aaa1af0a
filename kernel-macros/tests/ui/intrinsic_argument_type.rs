use kernel_macros::kernel;

// `clz` counts the leading zeros of a `u32`; a float must be converted (or its bits taken).
#[kernel]
pub fn leading_zeros(x: &[f32], y: &mut [u32]) {
    let i = thread_idx().x;
    y[i] = clz(x[i]);
}

fn main() {}
