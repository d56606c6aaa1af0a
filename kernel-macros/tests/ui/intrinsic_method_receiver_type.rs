use kernel_macros::kernel;

#[allow(non_camel_case_types)]
type f16 = kernel_runtime::F16;

#[kernel]
pub fn inv_norm(x: &[f16], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = x[i].rsqrt_rn();
}

fn main() {}
