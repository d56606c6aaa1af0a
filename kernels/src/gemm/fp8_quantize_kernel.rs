//! fp8 quantization in `#[kernel]` (sm_89+): `q = fp8(x / scale)`, each value divided by the
//! scale (IEEE division), then rounded to the format, nearest even and saturating
//! (`cvt.rn.satfinite`), four values packed into each `u32` word, the first in the lowest byte.
//! A thread takes one word at a time, the block's words contiguous, over a grid stride.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;

/// `q[i]` packs `x[4i .. 4i + 4] / scales[0]` in e4m3 (`E5M2` 0) or e5m2 (`E5M2` 1), for
/// `i < words`.
#[kernel(crate = crate::lang, block = 256, needs = sm_89,
         instances(T in [f32, bf16], E5M2 in [0, 1]))]
pub fn fp8_quantize<T: Element, const E5M2: u32>(
    x: &[T],
    scales: &[f32],
    q: &mut [u32],
    words: u32,
) {
    let scale = scales[0];
    let mut i = block_idx().x * 256 + thread_idx().x;
    while i < words {
        let v = x.load_vec::<4>(4 * i);
        let f = [
            v[0] as f32 / scale,
            v[1] as f32 / scale,
            v[2] as f32 / scale,
            v[3] as f32 / scale,
        ];
        let (lo, hi) = if E5M2 == 1 {
            (pack_e5m2x2(f[1], f[0]), pack_e5m2x2(f[3], f[2]))
        } else {
            (pack_e4m3x2(f[1], f[0]), pack_e4m3x2(f[3], f[2]))
        };
        q[i] = lo | (hi << 16);
        i += 256 * grid_dim().x;
    }
}
