//! Dequantization to f32 or bf16 in `#[kernel]`: a thread per chunk of 32 weights, each
//! decoded as ggml's reference does and stored as whole vectors.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const DEQUANTIZE_THREADS: u32 = 128;

/// `w`: rows of `row_bytes` bytes of format `F`; `out`: `rows × cols`, from row `first` of
/// `w` on.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], F in [0, 1, 2]), block = 128)]
pub fn gguf_dequantize<T: Element, const F: u32>(
    w: &[u32],
    out: &mut [T],
    first: u32,
    rows: u32,
    cols: u32,
    row_bytes: u32,
) {
    let chunks = cols / 32;
    let u = block_idx().x * block_dim().x + thread_idx().x;
    if u < rows * chunks {
        let row = u / chunks;
        let c = u % chunks;
        let at = chunk_at(c);
        let v = decode_chunk(w, (first + row) * row_bytes + at[0], at[1]);
        let first = row * cols + chunk_first(c);
        // Runs of `rl` consecutive elements; a vector never straddles two.
        let rl = 32u32 >> F;
        for j in 0..(32 / T::VEC) {
            let mut o = [0.0 as T; T::VEC];
            for e in 0..T::VEC {
                o[e] = v[j * T::VEC + e] as T;
            }
            let at = j * T::VEC;
            out.store_vec::<{ T::VEC }>(first + 32 * (at / rl) + at % rl, o);
        }
    }
}
