use kernel_macros::kernel;

// Only the bf16 instance needs more than sm_80 (the default target): the error names it.
#[kernel(instances(<f32>, <bf16>))]
pub fn add<T: Element>(a: &[T], b: &[T], c: &mut [T]) {
    let i = thread_idx().x;
    c[i] = a[i] + b[i];
}

fn main() {}
