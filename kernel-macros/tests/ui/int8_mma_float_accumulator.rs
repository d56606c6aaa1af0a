use kernel_macros::kernel;

// The int8 `mma` sums exactly in `i32`; an `f32` accumulator is a different instruction
// (`mma_m16n8k16_bf16` and its kin).
#[kernel]
pub fn int8_product(a: &[u32], b: &[u32], y: &mut [i32]) {
    let i = thread_idx().x;
    let acc = [0.0f32; 4];
    let d = mma_m16n8k32_s8([a[0], a[1], a[2], a[3]], [b[0], b[1]], acc);
    y[i] = d[0];
}

fn main() {}
