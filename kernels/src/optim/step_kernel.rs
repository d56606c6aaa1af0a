//! The AdamW step in `#[kernel]`: the update over every tensor of a [`ParamLayout`] in one
//! launch, and the single-thread kernel that advances a [`DeviceStep`].
//!
//! Per element, as PyTorch's `AdamW` (decoupled weight decay):
//! `p ← p·(1 − lr·wd_t)`, `m ← β1·m + (1−β1)·g`, `v ← β2·v + (1−β2)·g²`,
//! `p ← p − step_size · m / (√v · inv_sqrt_bc2 + eps)` with `step_size = lr / (1 − β1^t)` and
//! `inv_sqrt_bc2 = 1 / √(1 − β2^t)` computed on the host, or (`DEVICE = 1`) read from the
//! factors a [`DeviceStep`] keeps on the device.
//!
//! One block per chunk of the work table, each chunk inside one tensor. A thread takes four
//! groups of four elements (16 bytes of every f32 buffer, 8 or 16 of gradients, 8 of the bf16
//! copy, so every access of a warp is contiguous) and issues all their loads before any
//! arithmetic: a block of 256 threads holds its whole chunk at once, which keeps enough bytes in
//! flight. A tensor's last group may run into the padding after it (tensors start 8-aligned, so
//! the group stays inside the buffers): it is read whole and written element by element up to
//! the tensor's end, in the same pass as the rest, rather than by a scalar loop after it.
//!
//! [`ParamLayout`]: super::ParamLayout
//! [`DeviceStep`]: super::DeviceStep

use kernel_macros::{device, kernel};

/// `base^t` in f64 by binary powering over the 32 bits of `t`: the same products, in the same
/// order, as `f64::powi` (the result takes a factor only where a bit is set; squarings past
/// the highest bit do not reach it).
#[device(crate = crate::lang)]
fn powi_f64(base: f64, t: u32) -> f64 {
    let mut a = base;
    let mut r = 1.0f64;
    for bit in 0..32 {
        r = if (t >> bit) & 1 != 0 { r * a } else { r };
        a = a * a;
    }
    r
}

/// Thread 0 adds one to `count[0]` (the step `t`) and writes
/// `factors = [f32(lr / (1 − β1^t)), f32(1 / √(1 − β2^t))]`, computed in f64 as the host
/// computes them for `AdamW::step`, so the two paths give the same bits.
#[kernel(crate = crate::lang)]
pub fn adamw_advance(count: &mut [u32], factors: &mut [f32], lr: f32, beta1: f32, beta2: f32) {
    if thread_idx().x == 0 {
        let t = count[0] + 1;
        count[0] = t;
        let bc1 = 1.0f64 - powi_f64(beta1 as f64, t);
        let bc2 = 1.0f64 - powi_f64(beta2 as f64, t);
        factors[0] = ((lr as f64) / bc1) as f32;
        factors[1] = (1.0f64 / bc2.sqrt()) as f32;
    }
}

/// `params, grads, m, v, bf16_copy`: the flat buffers; `chunks`: `(start, end, tensor)` per
/// block; `decay`: 1 or 0 per tensor. `COPY = 1` writes the updated parameters to `bf16_copy`
/// as bf16; `SCALED = 1` multiplies every gradient by `clip[1]` (the scale `clip::grad_norm`
/// leaves there); `DEVICE = 1` reads `step_size` and `inv_sqrt_bc2` from `factors` instead of
/// the launch scalars. A buffer an instance does not use may be any buffer of its type.
#[kernel(
    crate = crate::lang,
    instances(T in [f32, bf16], COPY in [0, 1], SCALED in [0, 1], DEVICE in [0, 1])
)]
pub fn adamw_step<T: Element, const COPY: u32, const SCALED: u32, const DEVICE: u32>(
    params: &mut [f32],
    grads: &[T],
    m: &mut [f32],
    v: &mut [f32],
    bf16_copy: &mut [bf16],
    clip: &[f32],
    factors: &[f32],
    chunks: &[u32],
    decay: &[f32],
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step_size: f32,
    inv_sqrt_bc2: f32,
) {
    let entry = block_idx().x * 3;
    let start = chunks[entry];
    let end = chunks[entry + 1];
    let keep = 1.0 - lr * weight_decay * decay[chunks[entry + 2]];
    let mut step = step_size;
    let mut inv_bc2 = inv_sqrt_bc2;
    if DEVICE == 1 {
        step = factors[0];
        inv_bc2 = factors[1];
    }
    let mut scale = 1.0f32;
    if SCALED == 1 {
        scale = clip[1];
    }
    let neg_step = -step;
    let one_minus_beta1 = 1.0 - beta1;
    let one_minus_beta2 = 1.0 - beta2;
    let threads = block_dim().x;
    // Groups of four elements in the chunk, the last one possibly partial.
    let groups = (end - start + 3) / 4;
    // Groups a thread holds: with the host's chunks and blocks, the whole chunk in one pass.
    let hold = 4u32;
    let mut j = thread_idx().x;
    while j < groups {
        let mut at = [0u32; hold];
        let mut ok = [false; hold];
        let mut p = [0.0f32; hold * 4];
        let mut g = [0.0f32; hold * 4];
        let mut mm = [0.0f32; hold * 4];
        let mut vv = [0.0f32; hold * 4];
        // Every load of the held groups is issued before any arithmetic.
        for h in 0..hold {
            let jh = j + h * threads;
            ok[h] = jh < groups;
            at[h] = start + jh * 4;
            let gv = grads.load_vec_or::<4>(at[h], ok[h], 0.0 as T);
            let pv = params.load_vec_or::<4>(at[h], ok[h], 0.0);
            let mv = m.load_vec_or::<4>(at[h], ok[h], 0.0);
            let vv4 = v.load_vec_or::<4>(at[h], ok[h], 0.0);
            for k in 0..4 {
                g[h * 4 + k] = gv[k] as f32;
                p[h * 4 + k] = pv[k];
                mm[h * 4 + k] = mv[k];
                vv[h * 4 + k] = vv4[k];
            }
        }
        for e in 0..(hold * 4) {
            let mut ge = g[e];
            if SCALED == 1 {
                ge = ge * scale;
            }
            let decayed = p[e] * keep;
            let gm = one_minus_beta1 * ge;
            mm[e] = beta1.mul_add(mm[e], gm);
            let gv = one_minus_beta2 * (ge * ge);
            vv[e] = beta2.mul_add(vv[e], gv);
            let denom = vv[e].sqrt().mul_add(inv_bc2, eps);
            p[e] = neg_step.mul_add(mm[e] / denom, decayed);
        }
        for h in 0..hold {
            if ok[h] {
                if at[h] + 4 <= end {
                    let mut pv = [0.0f32; 4];
                    let mut mv = [0.0f32; 4];
                    let mut vv4 = [0.0f32; 4];
                    let mut cv = [0.0 as bf16; 4];
                    for k in 0..4 {
                        pv[k] = p[h * 4 + k];
                        mv[k] = mm[h * 4 + k];
                        vv4[k] = vv[h * 4 + k];
                        cv[k] = pv[k] as bf16;
                    }
                    params.store_vec::<4>(at[h], pv);
                    m.store_vec::<4>(at[h], mv);
                    v.store_vec::<4>(at[h], vv4);
                    if COPY == 1 {
                        bf16_copy.store_vec::<4>(at[h], cv);
                    }
                } else {
                    // The tensor's last group: only the elements before its end.
                    for k in 0..4 {
                        let i = at[h] + k;
                        if i < end {
                            params[i] = p[h * 4 + k];
                            m[i] = mm[h * 4 + k];
                            v[i] = vv[h * 4 + k];
                            if COPY == 1 {
                                bf16_copy[i] = p[h * 4 + k] as bf16;
                            }
                        }
                    }
                }
            }
        }
        j += hold * threads;
    }
}
