use kernel_macros::kernel;

// `dp4a_s8` reads int8 bytes and accumulates in `i32`; a `u32` sum must be converted, or
// the unsigned form `dp4a_u8` used.
#[kernel]
pub fn byte_dot(a: &[u32], b: &[u32], y: &mut [u32]) {
    let i = thread_idx().x;
    let sum = 0u32;
    y[i] = dp4a_s8(a[i], b[i], sum) as u32;
}

fn main() {}
