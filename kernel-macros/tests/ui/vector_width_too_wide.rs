use kernel_macros::kernel;

#[kernel(instances(<f32>))]
pub fn wide<T: Element>(x: &[T], y: &mut [T]) {
    let i = thread_idx().x * 8;
    let v = x.load_vec::<8>(i);
    y.store_vec::<8>(i, v);
}

fn main() {}
