use kernel_macros::kernel;

#[kernel]
pub fn all_ones(y: &mut [u32]) {
    let m: u32 = -1;
    y[0] = m;
}

fn main() {}
