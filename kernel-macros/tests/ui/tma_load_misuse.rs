use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// A rank-2 map names its box by two coordinates.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn one_coordinate(a: &TensorMap<bf16, 2>, c: &mut [f32]) {
    let smem = shared_array::<bf16, 4096>();
    let bars = shared_array::<u64, 1>();
    tma_load(smem, 0, a, [0u32], bars, 0);
}

// An mbarrier is a `u64`.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn barrier_of_u32(a: &TensorMap<bf16, 2>, c: &mut [f32]) {
    let bars = shared_array::<u32, 2>();
    mbarrier_init(bars, 0, 1);
}

// The accumulator is written in place, so it is passed as `&mut`.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn accumulator_by_value(c: &mut [f32], a: u64, b: u64) {
    let acc = [0.0f32; 32];
    wgmma_bf16(acc, a, b, true, false, false);
}

// A in registers is each warp's m16n8k16 A fragment: four words of 16-bit pairs.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn register_a_of_two_words(c: &mut [f32], b: u64) {
    let mut acc = [0.0f32; 32];
    wgmma_bf16_regs(&mut acc, [1u32, 2], b, true, false);
}

fn main() {}
