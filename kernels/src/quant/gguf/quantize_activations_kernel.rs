//! Activations to int8 for the int8 GEMV, a block of threads per row of `x`: each warp takes
//! blocks of 32 elements, `d = max|x| / 127`, `q = round_ties_even(x · (1 / d))` (0 where the
//! block is all zeros), and stores the int8 as packed words beside the pair `(d, d·Σq)`.
//! `NORM = 1` first normalizes the row as RMSNorm does, `x · rstd · γ` with
//! `rstd = 1 / sqrt(Σx² / k + eps)`, the sum of squares reduced in a fixed order (per
//! thread, a butterfly per warp, then the eight warps in order), so the CPU reference
//! (`reference::quantize_activations_rms_norm`) can give the same bits.

use kernel_macros::kernel;

/// Threads per block (a row each): eight warps.
pub(crate) const QUANTIZE_THREADS: u32 = 256;

/// `x`, `m × k` (`k` a multiple of 32, a block per row); `gamma`, `k` (read where
/// `NORM = 1`); `xq`, `m × k / 4` words; `xs`, `m × k / 32` pairs.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], NORM in [0, 1]),
    block = 256
)]
pub fn gguf_quantize_activations<T: Element, const NORM: u32>(
    x: &[T],
    gamma: &[T],
    xq: &mut [u32],
    xs: &mut [f32],
    k: u32,
    eps: f32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let row = block_idx().x;
    let t = thread_idx().x;
    let lane = lane_id();
    let warp = t / 32;
    let base = row * k;
    let mut rstd = 1.0f32;
    if NORM == 1 {
        let partial = shared_array::<f32, 8>();
        let mut ss = 0.0f32;
        let mut e = t;
        while e < k {
            let v = x[base + e] as f32;
            ss = fma(v, v, ss);
            e += 256;
        }
        for d in [16, 8, 4, 2, 1] {
            ss += shfl_xor(ss, d);
        }
        if lane == 0 {
            partial[warp] = ss;
        }
        sync_threads();
        let mut total = partial[0];
        for j in 1..8 {
            total += partial[j];
        }
        rstd = rsqrt_rn(total / (k as f32) + eps);
    }
    let blocks = k / 32;
    let mut b = warp;
    while b < blocks {
        let e = 32 * b + lane;
        let mut v = x[base + e] as f32;
        if NORM == 1 {
            v = v * rstd * (gamma[e] as f32);
        }
        let mut amax = abs(v);
        for d in [16, 8, 4, 2, 1] {
            amax = max(amax, shfl_xor(amax, d));
        }
        let d = amax / 127.0;
        let inv = if d != 0.0 { rcp_rn(d) } else { 0.0 };
        let q = round_ties_even(v * inv) as i32;
        // Four lanes' bytes into one word: disjoint bits, so OR is the sum.
        let mut word = ((q as u32) & 0xff) << (8 * (lane % 4));
        word |= shfl_xor(word, 1);
        word |= shfl_xor(word, 2);
        let mut sum = q as u32;
        for s in [16, 8, 4, 2, 1] {
            sum += shfl_xor(sum, s);
        }
        if lane % 4 == 0 {
            xq[(base + e) / 4] = word;
        }
        if lane == 0 {
            let at = 2 * (row * blocks + b);
            xs[at] = d;
            xs[at + 1] = d * ((sum as i32) as f32);
        }
        b += 8;
    }
}
