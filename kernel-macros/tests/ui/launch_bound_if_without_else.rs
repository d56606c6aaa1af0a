use kernel_macros::kernel;

#[kernel(instances(<1>, <4>), maxnreg = if W == 1 { 128 })]
pub fn copy<const W: u32>(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x * W;
    y.store_vec::<W>(i, x.load_vec::<W>(i));
}

fn main() {}
