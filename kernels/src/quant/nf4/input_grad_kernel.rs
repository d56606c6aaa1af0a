//! `dx = dy·W` through the NF4 weight without writing it out: a thread per code column (8
//! consecutive k) and row of `dy`, walking the rows of W.

use kernel_macros::kernel;

/// Threads per block.
pub(crate) const THREADS: u32 = 256;

/// `dx[i, p] = Σ_j dy[i, j] · W[j, p]` for `dy` `m × n`, W `n × k` in NF4 (`k` a multiple
/// of 64). Grid: `(ceil(k / 8 / 256), m)` blocks of 256.
#[kernel(crate = crate::lang, block = 256, instances(T in [f32, bf16]))]
pub fn nf4_input_grad<T: Element>(
    dy: &[T],
    codes: &[u32],
    absmax: &[f32],
    qabs: &[u32],
    code2: &[f32],
    scale2: &[f32],
    offset: f32,
    double: u32,
    dx: &mut [T],
    n: u32,
    k: u32,
) {
    let table = shared_array::<f32, 16>();
    let tid = thread_idx().x;
    if tid < 16 {
        table[tid] = nf4_value(tid);
    }
    sync_threads();
    let row_words = k >> 3;
    let col = block_idx().x * 256 + tid;
    let i = block_idx().y;
    if col < row_words {
        let mut acc = [0.0f32; 8];
        for j in 0..n {
            let gw = j * row_words + col;
            let word = codes[gw];
            let a = block_absmax(absmax, qabs, code2, scale2, offset, double, gw >> 3);
            let d = (dy[i * n + j] as f32) * a;
            for e in 0..8 {
                acc[e] = fma(d, table[word_code(word, e)], acc[e]);
            }
        }
        for h in 0..(8 / T::VEC) {
            let mut o = [0.0 as T; T::VEC];
            for e in 0..T::VEC {
                o[e] = acc[h * T::VEC + e] as T;
            }
            dx.store_vec::<{ T::VEC }>(i * k + col * 8 + h * T::VEC, o);
        }
    }
}
