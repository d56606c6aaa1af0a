//! Quantization on the device: a thread per code word (8 elements), 8 lanes per block of 64
//! sharing the block's absmax through shuffles.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;

/// Quantizes `x` (`8 · words` elements, row-major, `words` a multiple of 8): word `w` of
/// `codes` gets elements `8w..8w+8`, the absmax of each block of 64 goes to `absmax`.
/// Grid: `ceil(words / 256)` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(T in [f32, bf16]))]
pub fn nf4_quantize<T: Element>(x: &[T], codes: &mut [u32], absmax: &mut [f32], words: u32) {
    let w = block_idx().x * 256 + thread_idx().x;
    let ok = w < words;
    let mut v = [0.0f32; 8];
    for h in 0..(8 / T::VEC) {
        let u = x.load_vec_or::<{ T::VEC }>(w * 8 + h * T::VEC, ok, 0.0 as T);
        for e in 0..T::VEC {
            v[h * T::VEC + e] = u[e] as f32;
        }
    }
    let mut a = 0.0f32;
    for e in 0..8 {
        a = max(a, abs(v[e]));
    }
    // The 8 lanes of a block are aligned within the warp.
    for d in [4, 2, 1] {
        a = max(a, shfl_xor(a, d));
    }
    let inv = rcp_rn(a);
    let mut word = 0u32;
    for e in 0..8 {
        let c = nf4_code(v[e] * inv);
        word |= c << ((e >> 1) * 8 + 4 - (e & 1) * 4);
    }
    if ok {
        codes[w] = word;
        if w & 7 == 0 {
            absmax[w >> 3] = a;
        }
    }
}
