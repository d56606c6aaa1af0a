use kernel_macros::kernel;

#[kernel]
pub fn noisy(y: &mut [f32]) {
    println!("hello from the GPU");
    y[0] = 1.0;
}

fn main() {}
