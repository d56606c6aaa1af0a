use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// A cluster holds at least one block in every dimension.
#[kernel(crate = crate::paths, block = 32, cluster = 0, needs = sm_90)]
pub fn empty_cluster(out: &mut [u32]) {
    out[0] = 1;
}

// The shape is fixed when the kernel is built: a constant, not a parameter.
#[kernel(crate = crate::paths, block = 32, cluster = n, needs = sm_90)]
pub fn runtime_cluster(out: &mut [u32], n: u32) {
    out[0] = n;
}

// A portable cluster holds at most 8 blocks.
#[kernel(crate = crate::paths, block = 32, cluster = [4, 4, 1], needs = sm_90)]
pub fn sixteen_blocks(out: &mut [u32]) {
    out[0] = 1;
}

// A crate that enables no target builds for sm_80, which has no clusters.
#[kernel(crate = crate::paths, block = 32, cluster = 2)]
pub fn cluster_on_sm80(out: &mut [u32]) {
    out[0] = 1;
}

// The cluster intrinsics need sm_90 too.
#[kernel(crate = crate::paths, block = 32)]
pub fn rank_on_sm80(out: &mut [u32]) {
    out[0] = cluster_ctarank();
}

// Distributed shared memory is a shared array of every block, not a buffer.
#[kernel(crate = crate::paths, block = 32, cluster = 2, needs = sm_90)]
pub fn dsmem_of_a_buffer(out: &mut [u32]) {
    out[0] = dsmem_load(out, 1, 1);
}

fn main() {}
