use kernel_macros::kernel;

#[kernel]
pub fn copy<T>(x: &[T], y: &mut [T]) {
    let i = thread_idx().x;
    y[i] = x[i];
}

fn main() {}
