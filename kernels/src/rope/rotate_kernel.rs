//! RoPE in `#[kernel]`, forward and backward (the backward rotates by the negated angle).
//!
//! The work is a flat list of items: for each token, its heads in groups of [`held_heads`],
//! and for each group the chunks of a head, first the rotated ones, then those past the rotary
//! dimensions, which pass through. A thread takes one item: it issues the loads of that chunk
//! in every head of its group at once, computes the chunk's sines and cosines once while they
//! are in flight, then rotates and stores each head. So a thread keeps up to 128 bytes in
//! flight and waits one round trip per item, and neighbouring threads read neighbouring
//! accesses of one head.
//!
//! Angles are `position · 2^(i · exponent)` with `ex2.approx`, reduced to `[−π, π]`
//! (Cody–Waite, 2π split in two) before `sin.approx` / `cos.approx`.
//!
//! Instances: the element type `T`, the layout `INTERLEAVED` (0: NeoX, pair `(d[i],
//! d[i + half])`; 1: pair `(d[2i], d[2i + 1])`) and the access width `W` (16 bytes where every
//! chunk starts aligned, else one element; an interleaved chunk of one-element accesses is one
//! pair), and the heads a thread holds, `H`, which follows from the other two.

use kernel_macros::{device, kernel};

/// Heads a thread rotates with the sines and cosines it computes once (the kernel's `H`): 8 for
/// interleaved; 4 for NeoX in 16-byte chunks, which accesses each head twice; 2 for NeoX one
/// element at a time (measured faster than 4 or 1 at head_dim 34; such rows now go through
/// `staged_kernel` unless a token row exceeds its shared-memory budget).
pub(crate) const fn held_heads(interleaved: bool, one_element: bool) -> u32 {
    if interleaved {
        8
    } else if one_element {
        2
    } else {
        4
    }
}

/// `[cos, sign · sin]` of `pos · 2^(i · exponent)`.
#[device(crate = crate::lang)]
pub(crate) fn rotation(pos: f32, i: u32, exponent: f32, sign: f32) -> [f32; 2] {
    let angle = pos * ((i as f32) * exponent).exp2();
    // 1 / 2π, and 2π as f32 plus the rest of it.
    let k = (angle * 0.159_154_94).round_ties_even();
    let r = (-k).mul_add(6.283_185_5, angle);
    let r = (-k).mul_add(-1.748_455_5e-7, r);
    [r.cos(), r.sin() * sign]
}

/// `x, y: tokens × heads × head_dim`, `positions`: one per token. `half` = rotary_dim / 2;
/// `chunks` = accesses per head's rotary part (NeoX: per half); `sign` is 1 forward, −1
/// backward. Items: `tokens · ⌈heads / H⌉ · (chunks + (head_dim − 2·half) / W)`, `H` the
/// held heads.
#[kernel(
    crate = crate::lang,
    instances(
        T in [f32, bf16],
        INTERLEAVED in [0, 1],
        W in [1, T::VEC],
        H in [if INTERLEAVED == 1 { 8 } else if W == 1 { 2 } else { 4 }]
    )
)]
pub fn rope<T: Element, const INTERLEAVED: u32, const W: u32, const H: u32>(
    x: &[T],
    positions: &[u32],
    y: &mut [T],
    tokens: u32,
    heads: u32,
    head_dim: u32,
    half: u32,
    chunks: u32,
    exponent: f32,
    sign: f32,
) {
    let rot = 2 * half;
    let used = chunks + (head_dim - rot) / W;
    // Interleaved one-element instances give each group whole warps, so that a warp's accesses
    // start at a head instead of straddling two groups' heads (fewer sectors a request; the
    // same for NeoX, whose warps then idle more, measured slower).
    let per_group = if INTERLEAVED == 1 && W == 1 {
        (used + 31) / 32 * 32
    } else {
        used
    };
    // Heads a thread holds (`held_heads`).
    let groups = (heads + H - 1) / H;
    let per_token = groups * per_group;
    let items = tokens * per_token;
    let stride = block_dim().x * grid_dim().x;
    let mut item = block_idx().x * block_dim().x + thread_idx().x;
    while item < items {
        let token = item / per_token;
        let in_token = item - token * per_token;
        let group = in_token / per_group;
        let c = in_token - group * per_group;
        // The group's first head, within the token and in the whole tensor.
        let h0 = group * H;
        let head0 = token * heads + h0;
        // Each held head's first element of the chunk, and whether the head exists.
        let mut at = [0u32; H];
        let mut live = [false; H];
        if c < chunks {
            if INTERLEAVED == 0 || W == 1 {
                // Pairs `(d, d + partner)` for `d` in `d0 .. d0 + W`, rotation `i0 + k`.
                let mut d0 = c * W;
                let mut partner = half;
                let mut i0 = c * W;
                if INTERLEAVED == 1 {
                    d0 = 2 * c;
                    partner = 1;
                    i0 = c;
                }
                let mut a = [0.0 as T; H * W];
                let mut b = [0.0 as T; H * W];
                for h in 0..H {
                    at[h] = (head0 + h) * head_dim + d0;
                    live[h] = h0 + h < heads;
                    let u = x.load_vec_or::<W>(at[h], live[h], 0.0 as T);
                    let v = x.load_vec_or::<W>(at[h] + partner, live[h], 0.0 as T);
                    for k in 0..W {
                        a[h * W + k] = u[k];
                        b[h * W + k] = v[k];
                    }
                }
                let pos = positions[token] as f32;
                let mut cs = [0.0f32; 2 * W];
                for k in 0..W {
                    let r = rotation(pos, i0 + k, exponent, sign);
                    cs[2 * k] = r[0];
                    cs[2 * k + 1] = r[1];
                }
                for h in 0..H {
                    if live[h] {
                        let mut u = [0.0 as T; W];
                        let mut v = [0.0 as T; W];
                        for k in 0..W {
                            let x0 = a[h * W + k] as f32;
                            let x1 = b[h * W + k] as f32;
                            u[k] = x0.mul_add(cs[2 * k], -(x1 * cs[2 * k + 1])) as T;
                            v[k] = x1.mul_add(cs[2 * k], x0 * cs[2 * k + 1]) as T;
                        }
                        y.store_vec::<W>(at[h], u);
                        y.store_vec::<W>(at[h] + partner, v);
                    }
                }
            } else {
                // Interleaved vectors: pairs `(d0 + 2k, d0 + 2k + 1)`, rotation `c·W/2 + k`.
                let mut a = [0.0 as T; 8 * W];
                for h in 0..8 {
                    at[h] = (head0 + h) * head_dim + c * W;
                    live[h] = h0 + h < heads;
                    let u = x.load_vec_or::<W>(at[h], live[h], 0.0 as T);
                    for k in 0..W {
                        a[h * W + k] = u[k];
                    }
                }
                let pos = positions[token] as f32;
                let mut cs = [0.0f32; W];
                for k in 0..(W / 2) {
                    let r = rotation(pos, c * (W / 2) + k, exponent, sign);
                    cs[2 * k] = r[0];
                    cs[2 * k + 1] = r[1];
                }
                for h in 0..8 {
                    if live[h] {
                        let mut u = [0.0 as T; W];
                        for k in 0..(W / 2) {
                            let x0 = a[h * W + 2 * k] as f32;
                            let x1 = a[h * W + 2 * k + 1] as f32;
                            u[2 * k] = x0.mul_add(cs[2 * k], -(x1 * cs[2 * k + 1])) as T;
                            u[2 * k + 1] = x1.mul_add(cs[2 * k], x0 * cs[2 * k + 1]) as T;
                        }
                        y.store_vec::<W>(at[h], u);
                    }
                }
            }
        } else if c < used {
            // Past the rotary dimensions: copied.
            let d = rot + (c - chunks) * W;
            let mut a = [0.0 as T; H * W];
            for h in 0..H {
                at[h] = (head0 + h) * head_dim + d;
                live[h] = h0 + h < heads;
                let u = x.load_vec_or::<W>(at[h], live[h], 0.0 as T);
                for k in 0..W {
                    a[h * W + k] = u[k];
                }
            }
            for h in 0..H {
                if live[h] {
                    let mut u = [0.0 as T; W];
                    for k in 0..W {
                        u[k] = a[h * W + k];
                    }
                    y.store_vec::<W>(at[h], u);
                }
            }
        }
        item += stride;
    }
}
