use kernel_macros::kernel;

#[kernel]
pub fn big(y: &mut [u32]) {
    let big: u32 = 5000000000;
    y[0] = big;
}

fn main() {}
