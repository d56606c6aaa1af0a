use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// bf16 addition needs sm_90; a crate that enables no target builds for sm_80.
#[kernel(crate = crate::paths)]
pub fn add_bf16(a: &[bf16], b: &[bf16], c: &mut [bf16], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        c[i] = a[i] + b[i];
    }
}

fn main() {}
