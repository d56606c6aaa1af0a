use kernel_macros::kernel;

#[kernel]
pub fn count(y: &mut [u32]) {
    let k = 0u32;
    k = k + 1;
    y[0] = k;
}

fn main() {}
