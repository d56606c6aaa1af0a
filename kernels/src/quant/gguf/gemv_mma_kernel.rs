//! The decode GEMV `y = x·Wᵀ` for up to 16 rows of `x` on the tensor cores (sm_80+), over
//! Q8_0, Q4_K or Q6_K weights. A warp taking two tiles of 8 weight rows makes them the `A`
//! operand of `mma.m16n8k16` (rows `g` and `g + 8`) and the rows of `x` its `n`: one product
//! covers 256 weights and the activation operand is two registers straight from a 16-byte
//! load; rows of `x` past 8 take a second product on the same `A`, none when `m ≤ 8`. A warp
//! taking one tile makes the rows of `x` the `A` (its upper half repeating the lower when
//! `m ≤ 8`) and its 8 weight rows the `n`, so no half of a product is zeros. The
//! eight warps of a block share the same rows and take every eighth block of 256 weights of
//! them, a lane loading the words of its next block while it decodes the current one. A
//! block takes every `grid_dim().x`-th tile of rows, and past a tile's last block a warp's
//! next loads are its next tile's first, in flight while the block sums and stores: at short
//! rows (a few blocks of 256 a warp) a block is not one load latency long and then gone. A
//! lane turns its codes into bf16 weights in registers (`fragment.rs`): the weight bytes are
//! read once and nothing is staged in shared memory. The warps' f32 accumulators are summed
//! through shared memory in warp order: reruns give the same bits.

use kernel_macros::kernel;

/// Threads per block: eight warps over the same weight rows.
pub(crate) const GEMV_MMA_THREADS: u32 = 256;

/// `w`: weight rows of `row_bytes` bytes of format `F` (0 Q8_0, 1 Q4_K, 2 Q6_K; `k` a
/// multiple of 256); `x`: `m × k` elements of `X` read as words (`k / 2` a row for bf16);
/// `1 ≤ m ≤ 16`; the outputs are `T` (bf16 `x` may give f32 `y`: the products read `x` as
/// bf16 whatever its type, so a bf16 input needs no cast in front). `NT` tiles of 8 weight rows a warp: Q8_0, and Q6_K with f32 `x`, take one
/// (with two, the words of two blocks in flight for each tile spill).
///
/// `GLU = 0`: `w` has `n` rows and product column `c` goes to `y0` (`m × n0`) below `n0`,
/// to `y1` (`m × n1`) below `n0 + n1` and to `y2` (`m × (n − n0 − n1)`) past that: a stacked
/// weight's parts land in their own outputs. `GLU = 1` (two tiles only): `w` is a gate's `n`
/// rows stacked over an up's `n`; a warp's two tiles are the same 8 rows of each, and `y0`
/// (`m × n`) receives `silu(gate) · up`.
#[kernel(
    crate = crate::lang,
    instances(
        <f32, f32, 0, 1, 0>,
        <bf16, bf16, 0, 1, 0>,
        <f32, f32, 1, 1, 0>,
        <f32, f32, 1, 2, 0>,
        <f32, f32, 2, 1, 0>,
        <bf16, bf16, 1, 1, 0>,
        <bf16, bf16, 1, 2, 0>,
        <bf16, bf16, 2, 1, 0>,
        <bf16, bf16, 2, 2, 0>,
        <f32, f32, 1, 2, 1>,
        <bf16, bf16, 1, 2, 1>,
        <bf16, bf16, 2, 2, 1>,
        <bf16, f32, 0, 1, 0>,
        <bf16, f32, 1, 1, 0>,
        <bf16, f32, 1, 2, 0>,
        <bf16, f32, 2, 1, 0>,
        <bf16, f32, 2, 2, 0>
    ),
    block = 256,
    min_blocks = 2
)]
#[allow(clippy::too_many_arguments)]
pub fn gguf_gemv_mma<X: Element, T: Element, const F: u32, const NT: u32, const GLU: u32>(
    w: &[u32],
    x: &[u32],
    y0: &mut [T],
    y1: &mut [T],
    y2: &mut [T],
    m: u32,
    n: u32,
    n0: u32,
    n1: u32,
    k: u32,
    row_bytes: u32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let lane = lane_id();
    let warp = thread_idx().x / 32;
    let g = lane / 4;
    let t = lane % 4;
    let bytes = block_bytes();
    // Tiles of output columns: 8·NT rows of `w`, or with `GLU` 8 rows of each half. A block
    // takes tiles `block_idx().x`, then every `grid_dim().x`-th after it.
    let mut width = 8 * NT;
    if GLU == 1 {
        width = 8;
    }
    let mut tile_i = block_idx().x;
    // Byte offsets of the lane's weight rows in the block's current tile: `g`, then `g + 8`
    // (with `GLU`, the up's `g`).
    let mut base = [0u32; NT];
    for j in 0..NT {
        base[j] = min(tile_i * width + 8 * j + g, n - 1) * row_bytes;
        if GLU == 1 {
            base[j] = (min(tile_i * width + g, n - 1) + j * n) * row_bytes;
        }
    }
    // The lane's rows of `x`: `g`, and `g + 8` when `m > 8`.
    let x0 = min(g, m - 1) * k;
    let x1 = min(g + 8, m - 1) * k;
    let blocks = k / 256;
    // The words of this warp's current block. Once they are aligned, the next block's loads
    // go out into the same registers (past a tile's last block, the first of the block's
    // next tile), so a warp always has a block's loads in flight, across tiles too.
    let mut raw = [0u32; 24 * NT];
    for j in 0..NT {
        let v = load_block(w, base[j] + bytes * min(warp, blocks - 1), t);
        for i in 0..24 {
            raw[24 * j + i] = v[i];
        }
    }
    // Element i of lane l of warp v at (i·8 + v)·32 + l: each store and load a row of banks.
    let part = shared_array::<f32, { 1024 * NT }>();
    let mut more = tile_i * width < n;
    while more {
        // With two tiles, products for the rows of `x` below 8, then above; with one, a
        // product's four accumulators.
        let mut acc = [0.0f32; 4 * NT];
        let mut c0 = warp;
        while c0 < blocks {
            // Per tile: the block's words in a fixed layout, and what its groups share.
            let mut words = [0u32; 18 * NT];
            let mut shared = [0u32; 8 * NT];
            for j in 0..NT {
                let mut v = [0u32; 24];
                for i in 0..24 {
                    v[i] = raw[24 * j + i];
                }
                let a = align_block(v, base[j] + bytes * c0);
                let p = block_scales(a, t);
                for i in 0..18 {
                    words[18 * j + i] = a[i];
                }
                for i in 0..8 {
                    shared[8 * j + i] = p[i];
                }
            }
            for j in 0..NT {
                let mut at = base[j] + bytes * (c0 + 8);
                if c0 + 8 >= blocks {
                    // The lane's row of the block's next tile; past its last, of this one
                    // again, so that the last loads (of nothing needed) hit the cache.
                    let mut ahead = (tile_i + grid_dim().x) * width;
                    if ahead >= n {
                        ahead = tile_i * width;
                    }
                    ahead += g;
                    at = min(ahead + 8 * j, n - 1) * row_bytes;
                    if GLU == 1 {
                        at = (min(ahead, n - 1) + j * n) * row_bytes;
                    }
                    at += bytes * min(warp, blocks - 1);
                    if F == 2 && NT == 2 {
                        // A block a tile (below): nothing more to load.
                        at = base[j] + bytes * (blocks - 1);
                    }
                }
                let v = load_block(w, at, t);
                for i in 0..24 {
                    raw[24 * j + i] = v[i];
                }
            }
            let xa0 = x_word(x0 + 256 * c0 + 8 * t);
            let xb0 = x_word(x1 + 256 * c0 + 8 * t);
            for s in 0..8 {
                // Group s: weights 32s..32s + 32 of the block, the lane's eight of each of
                // its rows.
                let mut b = [0u32; 4 * NT];
                for j in 0..NT {
                    let mut a = [0u32; 18];
                    for i in 0..18 {
                        a[i] = words[18 * j + i];
                    }
                    let mut p = [0u32; 8];
                    for i in 0..8 {
                        p[i] = shared[8 * j + i];
                    }
                    let o = group_operand(a, s, group_scales(p, s));
                    for i in 0..4 {
                        b[4 * j + i] = o[i];
                    }
                }
                let xa = x_pairs(x, xa0 + x_word(32 * s));
                if NT == 2 {
                    // The weights are `A`, the rows of `x` the `n`.
                    let lo = [b[0], b[4], b[1], b[5]];
                    let hi = [b[2], b[6], b[3], b[7]];
                    let prev = [acc[0], acc[1], acc[2], acc[3]];
                    let d0 = mma_m16n8k16_bf16(lo, [xa[0], xa[1]], prev);
                    let d1 = mma_m16n8k16_bf16(hi, [xa[2], xa[3]], d0);
                    for i in 0..4 {
                        acc[i] = d1[i];
                    }
                    if m > 8 {
                        let xb = x_pairs(x, xb0 + x_word(32 * s));
                        let prev = [acc[4], acc[5], acc[6], acc[7]];
                        let e0 = mma_m16n8k16_bf16(lo, [xb[0], xb[1]], prev);
                        let e1 = mma_m16n8k16_bf16(hi, [xb[2], xb[3]], e0);
                        for i in 0..4 {
                            acc[4 + i] = e1[i];
                        }
                    }
                } else {
                    // The rows of `x` are `A`; with at most 8, its upper half repeats the
                    // lower.
                    let mut xb = [0u32; 4];
                    if m > 8 {
                        let v = x_pairs(x, xb0 + x_word(32 * s));
                        for i in 0..4 {
                            xb[i] = v[i];
                        }
                    } else {
                        for i in 0..4 {
                            xb[i] = xa[i];
                        }
                    }
                    let prev = [acc[0], acc[1], acc[2], acc[3]];
                    let d0 = mma_m16n8k16_bf16([xa[0], xb[0], xa[1], xb[1]], [b[0], b[1]], prev);
                    let d1 = mma_m16n8k16_bf16([xa[2], xb[2], xa[3], xb[3]], [b[2], b[3]], d0);
                    for i in 0..4 {
                        acc[i] = d1[i];
                    }
                }
            }
            c0 += 8;
        }
        let tile = tile_i * width;
        let next_i = tile_i + grid_dim().x;
        if next_i * width >= n {
            // Every weight is loaded: the next kernel's blocks may be placed while this
            // block reduces and stores (releasing at the top crowded them onto the SMs with
            // room).
            griddep_launch_dependents();
        }
        for i in 0..4 * NT {
            part[(i * 8 + warp) * 32 + lane] = acc[i];
        }
        sync_threads();
        // Warp j < NT sums four elements over the eight warps, in warp order. With two
        // tiles, element i of a lane is weight row g + 8·(i / 2) and row 2t + i % 2 of `x`
        // (plus 8 for warp 1); with one, row g + 8·(i / 2) of `x` and weight row 2t + i % 2.
        if warp < NT {
            let mut total = [0.0f32; 4];
            for i in 0..4 {
                let e = 4 * warp + i;
                total[i] = part[e * 256 + lane];
                for v in 1..8 {
                    total[i] += part[(e * 8 + v) * 32 + lane];
                }
            }
            if GLU == 1 {
                // Elements i and i + 2 are the gate's and the up's row g for the same row
                // of `x`.
                let col = tile + g;
                for i in 0..2 {
                    let row = 8 * warp + 2 * t + i;
                    if row < m && col < n {
                        y0[row * n + col] = swiglu_value(total[i], total[i + 2]) as T;
                    }
                }
            } else {
                for i in 0..4 {
                    let mut row = 8 * warp + 2 * t + i % 2;
                    let mut col = tile + g + 8 * (i / 2);
                    if NT == 1 {
                        row = g + 8 * (i / 2);
                        col = tile + 2 * t + i % 2;
                    }
                    if row < m && col < n {
                        let v = total[i] as T;
                        if col < n0 {
                            y0[row * n0 + col] = v;
                        } else if col < n0 + n1 {
                            y1[row * n1 + col - n0] = v;
                        } else {
                            let n2 = n - n0 - n1;
                            y2[row * n2 + col - n0 - n1] = v;
                        }
                    }
                }
            }
        }
        more = next_i * width < n;
        if F == 2 && NT == 2 {
            // Q6_K with two tiles takes one tile a block (the host launches a block a tile):
            // a loop over tiles holds more than its registers.
            more = false;
        }
        if more {
            // The partial sums are the next tile's to write.
            sync_threads();
            tile_i = next_i;
            for j in 0..NT {
                base[j] = min(tile_i * width + 8 * j + g, n - 1) * row_bytes;
                if GLU == 1 {
                    base[j] = (min(tile_i * width + g, n - 1) + j * n) * row_bytes;
                }
            }
        }
    }
}
