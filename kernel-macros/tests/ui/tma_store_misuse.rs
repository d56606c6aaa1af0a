use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// The tile holds the map's element type.
#[kernel(crate = crate::paths, block = 128, needs = sm_90)]
pub fn tile_of_another_type(c: &TensorMap<f32, 2>) {
    let tile = shared_array::<bf16, 512>();
    tma_store(c, [0u32, 0], tile, 0);
}

// A rank-2 map names its box by two coordinates.
#[kernel(crate = crate::paths, block = 128, needs = sm_90)]
pub fn three_coordinates(c: &TensorMap<f32, 2>) {
    let tile = shared_array::<f32, 512>();
    tma_store(c, [0u32, 0, 0], tile, 0);
}

// The count of pending groups is a constant.
#[kernel(crate = crate::paths, block = 128, needs = sm_90)]
pub fn pending_at_run_time(c: &TensorMap<f32, 2>, n: u32) {
    tma_store_wait_read(n);
}

// Tensor stores need sm_90; this crate builds for sm_80.
#[kernel(crate = crate::paths, block = 128)]
pub fn below_sm_90(c: &mut [f32]) {
    tma_store_commit();
}

fn main() {}
