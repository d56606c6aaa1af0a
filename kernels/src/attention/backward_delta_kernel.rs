//! The first step of the flash-attention backward: `delta = rowsum(dO ∘ O)` per query and
//! head, in f32, which both gradient kernels read.

use kernel_macros::kernel;

/// `delta[h · tokens + t] = Σ_e o[t, h, e] · d_o[t, h, e]` for the `rows = tokens · heads_q`
/// rows of `o` and `d_o`, one warp a row, summed in a fixed order.
#[kernel(crate = crate::lang, block = 128, instances(T in [bf16, f16], D in [64, 128, 256]))]
pub fn flash_backward_delta<T: Element, const D: u32>(
    o: &[T],
    d_o: &[T],
    delta: &mut [f32],
    rows: u32,
    heads_q: u32,
    tokens: u32,
) {
    let row = block_idx().x * 4 + (thread_idx().x >> 5);
    let lane = lane_id();
    if row < rows {
        let mut sum = 0.0f32;
        for j in 0..D / 64 {
            let at = row * D + j * 64 + lane * 2;
            let a = o.load_vec::<2>(at);
            let b = d_o.load_vec::<2>(at);
            sum += (a[0] as f32) * (b[0] as f32) + (a[1] as f32) * (b[1] as f32);
        }
        for m in [16, 8, 4, 2, 1] {
            sum += shfl_xor(sum, m);
        }
        if lane == 0 {
            delta[(row % heads_q) * tokens + row / heads_q] = sum;
        }
    }
}
