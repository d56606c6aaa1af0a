use kernel_macros::kernel;

#[kernel(instances(<f32, 256>, <f32>))]
pub fn copy<T, const BLOCK: u32>(x: &[T], y: &mut [T]) {
    let i = thread_idx().x;
    y[i] = x[i];
}

fn main() {}
