//! Embedding forward and backward in `#[kernel]`.
//!
//! The forward (`embedding`) copies row `ids[t]` of the table to row `t` of the output, NaN
//! where the id is not below `vocab`, so a bad id shows. A row belongs to a warp (`CTA = 0`) or
//! a block (`CTA = 1`); each thread issues the loads of [`held_chunks`] chunks of the row (64
//! bytes) before storing any of them, so it waits one round trip per 64 bytes, not per access.
//!
//! The backward (`embedding_backward`) uses no atomics: `dtable[v] = Σ dout[t]` over the tokens
//! `t` with `ids[t] = v`, summed in token order. Each warp owns [`ROWS_PER_WARP`] consecutive
//! vocabulary rows. It scans all token ids in order, 8 × 32 at a time (all loaded before the
//! first is looked at), and a ballot marks the ones in its rows; it takes those
//! lowest lane first (earliest token first) and adds the token's gradient row into the table
//! row, all 32 lanes across the hidden dimension, two vectors (or 8 elements) a lane at a time. The first token of a row stores instead of
//! adding (a bitmask remembers which rows were touched); untouched rows are zeroed at the end.
//! Only the owning warp ever touches a row, so the result is the same on every run.

use kernel_macros::kernel;

/// Chunks of a row a thread of the forward holds: four 16-byte vectors, or 64 bytes of single
/// elements (the kernel's `4 * T::VEC / W`).
pub(crate) const fn held_chunks(vector: u32, width: u32) -> u32 {
    4 * vector / width
}

/// Vocabulary rows per warp of the backward (one bit each of a warp mask).
pub(crate) const ROWS_PER_WARP: u32 = 32;
/// Threads per block the backward is launched with.
pub(crate) const SCATTER_THREADS: u32 = 128;

/// `table: vocab × hidden`, `ids: tokens`, `out: tokens × hidden`.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC], CTA in [0, 1]))]
pub fn embedding<T: Element, const W: u32, const CTA: u32>(
    table: &[T],
    ids: &[u32],
    out: &mut [T],
    tokens: u32,
    hidden: u32,
    vocab: u32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let g = row_group();
    let lane = g[0];
    let group = g[1];
    let mut row = g[2];
    let chunks = hidden / W;
    while row < tokens {
        let id = ids[row];
        let valid = id < vocab;
        let src = id * hidden;
        let dst = row * hidden;
        let mut c0 = lane;
        while c0 < chunks {
            let mut v = [0.0 as T; 4 * T::VEC];
            let mut col = [0u32; 4 * T::VEC / W];
            let mut inside = [false; 4 * T::VEC / W];
            for h in 0..(4 * T::VEC / W) {
                let c = c0 + h * group;
                col[h] = c * W;
                inside[h] = c < chunks;
                let u = table.load_vec_or::<W>(src + col[h], inside[h] && valid, T::NAN);
                for k in 0..W {
                    v[h * W + k] = u[k];
                }
            }
            for h in 0..(4 * T::VEC / W) {
                if inside[h] {
                    let mut u = [0.0 as T; W];
                    for k in 0..W {
                        u[k] = v[h * W + k];
                    }
                    out.store_vec::<W>(dst + col[h], u);
                }
            }
            c0 += (4 * T::VEC / W) * group;
        }
        row += g[3];
    }
}

/// `dout: tokens × hidden`, `ids: tokens`, `dtable: vocab × hidden`; a warp per 32 vocabulary
/// rows.
#[kernel(crate = crate::lang, instances(T in [f32, bf16], W in [1, T::VEC]))]
pub fn embedding_backward<T: Element, const W: u32>(
    dout: &[T],
    ids: &[u32],
    dtable: &mut [T],
    tokens: u32,
    hidden: u32,
    vocab: u32,
) {
    let lane = lane_id();
    // The warp's first vocabulary row.
    let v0 = (block_idx().x * (block_dim().x / 32) + thread_idx().x / 32) * 32;
    let chunks = hidden / W;
    // Bit `r`: row `v0 + r` has been written.
    let mut touched = 0u32;
    let mut base = 0u32;
    while base < tokens {
        // Which of the next 8 × 32 tokens fall in this warp's rows, one mask per 32.
        let mut hits = [0u32; 8];
        let mut id = [0u32; 8];
        for j in 0..8 {
            let t = base + j * 32 + lane;
            let u = ids.load_vec_or::<1>(t, t < tokens, u32::MAX);
            id[j] = u[0];
        }
        for j in 0..8 {
            hits[j] = ballot(id[j] - v0 < 32 && id[j] < vocab);
        }
        for j in 0..8 {
            let mut pending = hits[j];
            while pending != 0 {
                let l = clz(brev(pending));
                pending &= pending - 1;
                let v = shfl_idx(id[j], l);
                let tok = base + j * 32 + l;
                let bit = 1u32 << (v - v0);
                let seen = (touched & bit) != 0;
                touched |= bit;
                let src = tok * hidden;
                let dst = v * hidden;
                // Two vectors (or 8 elements) of the row a lane per pass, every load issued before any
                // store; more would cost the registers that keep every block resident at once.
                let mut c0 = lane;
                while c0 < chunks {
                    let mut s = [0.0f32; (8 - 6 * (W / T::VEC)) * W];
                    let mut col = [0u32; 8 - 6 * (W / T::VEC)];
                    let mut inside = [false; 8 - 6 * (W / T::VEC)];
                    for h in 0..(8 - 6 * (W / T::VEC)) {
                        let c = c0 + h * 32;
                        col[h] = c * W;
                        inside[h] = c < chunks;
                        let gv = dout.load_vec_or::<W>(src + col[h], inside[h], 0.0 as T);
                        for k in 0..W {
                            s[h * W + k] = gv[k] as f32;
                        }
                    }
                    if seen {
                        for h in 0..(8 - 6 * (W / T::VEC)) {
                            let old = dtable.load_vec_or::<W>(dst + col[h], inside[h], 0.0 as T);
                            for k in 0..W {
                                s[h * W + k] = (old[k] as f32) + s[h * W + k];
                            }
                        }
                    }
                    for h in 0..(8 - 6 * (W / T::VEC)) {
                        if inside[h] {
                            let mut o = [0.0 as T; W];
                            for k in 0..W {
                                o[k] = s[h * W + k] as T;
                            }
                            dtable.store_vec::<W>(dst + col[h], o);
                        }
                    }
                    c0 += (8 - 6 * (W / T::VEC)) * 32;
                }
            }
        }
        base += 8 * 32;
    }
    // Rows no token touched get zeros, four vectors a lane per pass.
    let mut r = 0u32;
    while r < 32 {
        let v = v0 + r;
        if v < vocab && (touched & (1u32 << r)) == 0 {
            let dst = v * hidden;
            let zeros = [0.0 as T; W];
            let mut c = lane;
            while c < chunks {
                for d in [0, 32, 64, 96] {
                    if c + d < chunks {
                        dtable.store_vec::<W>(dst + (c + d) * W, zeros);
                    }
                }
                c += 4 * 32;
            }
        }
        r += 1;
    }
}
