//! Dequantization on the device: a thread per code word, 8 elements out.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;

/// `y[i] = NF4_CODE[code(i)] · absmax(i / 64)` (rounded to `T`) for the `8 · words` elements.
/// Grid: `ceil(words / 256)` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(T in [f32, bf16]))]
pub fn nf4_dequantize<T: Element>(
    codes: &[u32],
    absmax: &[f32],
    qabs: &[u32],
    code2: &[f32],
    scale2: &[f32],
    offset: f32,
    double: u32,
    y: &mut [T],
    words: u32,
) {
    let w = block_idx().x * 256 + thread_idx().x;
    if w < words {
        let word = codes[w];
        let a = block_absmax(absmax, qabs, code2, scale2, offset, double, w >> 3);
        for h in 0..(8 / T::VEC) {
            let mut o = [0.0 as T; T::VEC];
            for e in 0..T::VEC {
                o[e] = (nf4_value(word_code(word, h * T::VEC + e)) * a) as T;
            }
            y.store_vec::<{ T::VEC }>(w * 8 + h * T::VEC, o);
        }
    }
}
