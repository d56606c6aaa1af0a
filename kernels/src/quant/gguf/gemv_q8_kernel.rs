//! Decode GEMV `y = x·Wᵀ` over a GGUF weight and int8 activations (`activations.rs`), for up
//! to `MT` rows of `x`: a warp per output row, lane `l` taking pieces `l, l + 32, …` of the
//! row (`dot_q8.rs`), so a warp's loads of a pass are one contiguous stretch, and applying
//! each piece to every row of `x` before the next, so each weight byte is read once. A lane
//! loads the words of `U` pieces before unpacking the first. Per four weights one `dp4a`
//! (integer, exact); per run of codes one f32 multiply-add of the scales; f32 accumulation in
//! a fixed order, then a butterfly over the warp: reruns give the same bits.

use kernel_macros::kernel;

/// Output rows per block (a warp each). At least four blocks an SM (128 registers), so that
/// enough warps stay resident to keep weight loads in flight.
pub(crate) const GEMV_Q8_ROWS_PER_BLOCK: u32 = 4;

/// `w`: `n` rows of `row_bytes` bytes of format `F`; `xq`: `m` rows of `k / 4` words of int8;
/// `xs`: `m` rows of `k / 32` pairs `(d, d·Σq)`; `y`: `m × n`; `m ≤ MT`.
#[kernel(
    crate = crate::lang,
    instances(
        T in [f32, bf16],
        F in [0, 1, 2],
        MT in [1, 4, 16],
        U in [if MT == 1 { 4 } else if MT == 4 { 2 } else { 1 }]
    ),
    block = 128,
    min_blocks = 4
)]
pub fn gguf_gemv_q8<T: Element, const F: u32, const MT: u32, const U: u32>(
    w: &[u32],
    xq: &[u32],
    xs: &[f32],
    y: &mut [T],
    m: u32,
    n: u32,
    k: u32,
    row_bytes: u32,
) {
    let lane = lane_id();
    let row = block_idx().x * 4 + thread_idx().x / 32;
    if row < n {
        let pieces = pieces_per_row(k);
        let base = row * row_bytes;
        let mut acc = [0.0f32; MT];
        let mut c0 = lane;
        while c0 < pieces {
            // Every load of the U pieces first; past the row's end, a lane reloads its last
            // piece (in cache) and skips it below, so that no load is predicated.
            let mut raw = [0u32; 13 * U];
            for u in 0..U {
                let v = load_piece(w, base, min(c0 + 32 * u, pieces - 1));
                for j in 0..13 {
                    raw[13 * u + j] = v[j];
                }
            }
            if c0 == lane {
                // Where the launch lets this kernel start while the one before it finishes
                // (sm_90+), it waits here until that one is done: after the first weight
                // loads, since no kernel writes a weight (`GgufWeights` is filled by its
                // upload only), before any other access.
                griddep_wait();
            }
            for u in 0..U {
                let c = c0 + 32 * u;
                if c < pieces {
                    let mut v = [0u32; 13];
                    for j in 0..13 {
                        v[j] = raw[13 * u + j];
                    }
                    let q = piece_codes(v, base, c);
                    let s = piece_scales(v, base, c);
                    for i in 0..MT {
                        if i < m {
                            let xq_row = &xq[i * (k / 4)..];
                            let xs_row = &xs[i * (k / 16)..];
                            acc[i] = piece_dot(q, s, xq_row, xs_row, c, acc[i]);
                        }
                    }
                }
            }
            c0 += 32 * U;
        }
        // Every weight is loaded: the next kernel's blocks may be placed while this block
        // reduces and stores (releasing at the top crowded them onto the SMs with room).
        griddep_launch_dependents();
        for i in 0..MT {
            let mut t = acc[i];
            for d in [16, 8, 4, 2, 1] {
                t += shfl_xor(t, d);
            }
            if lane == 0 && i < m {
                y[i * n + row] = t as T;
            }
        }
    }
}
