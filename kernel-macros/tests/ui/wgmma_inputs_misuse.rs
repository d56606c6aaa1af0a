use kernel_macros::kernel;

mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_runtime as runtime;
}

// tf32 and fp8 operands are K-major: their `wgmma` takes no layout flags.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn tf32_with_layout_flags(c: &mut [f32], a: u64, b: u64) {
    let mut acc = [0.0f32; 32];
    wgmma_tf32(&mut acc, a, b, true, false, false);
}

// The accumulator holds N / 2 floats for N a multiple of 8.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn fp8_with_a_short_accumulator(c: &mut [f32], a: u64, b: u64) {
    let mut acc = [0.0f32; 3];
    wgmma_e4m3_e5m2(&mut acc, a, b, true);
}

// fp8 A in registers is four words of four values.
#[kernel(crate = crate::paths, block = 128, needs = sm_90a)]
pub fn fp8_register_a_of_two_words(c: &mut [f32], b: u64) {
    let mut acc = [0.0f32; 32];
    wgmma_e5m2_e5m2_regs(&mut acc, [1u32, 2], b, true);
}

fn main() {}
