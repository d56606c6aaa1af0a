use kernel_macros::kernel;

#[kernel]
pub fn big(y: &mut [u32]) {
    const BIG: u32 = 5000000000;
    y[0] = BIG;
}

fn main() {}
