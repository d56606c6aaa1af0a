use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// `wgmma` needs sm_90a; a crate that enables no target builds for sm_80, and this kernel does
// not say `needs = sm_90a`.
#[kernel(crate = crate::paths, block = 128)]
pub fn tile(c: &mut [f32]) {
    let mut acc = [0.0f32; 32];
    wgmma_fence();
    c[thread_idx().x] = acc[0];
}

fn main() {}
