use kernel_macros::kernel;

#[kernel(instances(W in [1, 4], T in [f32]))]
pub fn copy<T: Element, const W: u32>(x: &[T], y: &mut [T]) {
    let i = thread_idx().x * W;
    let v = x.load_vec::<W>(i);
    y.store_vec::<W>(i, v);
}

fn main() {}
