//! The RoPE kernel, forward and backward (the backward rotates by the negated angle).
//!
//! A CTA takes one token at a time (grid-stride over tokens). Its threads form a 2-D block:
//! `x` walks the chunks of a head's rotary part, `y` walks the heads, so each thread computes
//! the sines and cosines of its chunk once and applies them to every head it visits. Angles are
//! `position · 2^(i · exponent)` with `ex2.approx`, reduced to `[−π, π]` (Cody–Waite, 2π split
//! in two) before `sin.approx` / `cos.approx`.

use super::spec::{RopeLayout, RopeSpec};
use crate::codegen::tensor::{tensor_param, Tensor};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::{ApproxFn, CvtRounding};
use kernel_dsl::scalar::{F32, U32};

/// 2π rounded to f32, and the rest of it.
const TWO_PI_HI: f32 = 6.283_185_5;
const TWO_PI_LO: f32 = -1.748_455_5e-7;

/// `(cos, ±sin)` of `position · inv_freq(i)`.
fn rotation(
    b: &mut KernelBuilder,
    pos: Value<F32>,
    i: Value<U32>,
    exponent: Value<F32>,
    sign: Value<F32>,
) -> (Value<F32>, Value<F32>) {
    let i_f = b.cvt::<F32, U32>(i);
    let e = b.mul(i_f, exponent);
    let inv_freq = b.approx(ApproxFn::Ex2, e);
    let angle = b.mul(pos, inv_freq);
    let inv_two_pi = b.const_f32(1.0 / (2.0 * std::f32::consts::PI));
    let turns = b.mul(angle, inv_two_pi);
    let k = b.cvt_with::<F32, F32>(turns, Some(CvtRounding::Rni));
    let nk = b.neg(k);
    let hi = b.const_f32(TWO_PI_HI);
    let lo = b.const_f32(TWO_PI_LO);
    let r = b.fma(nk, hi, angle);
    let r = b.fma(nk, lo, r);
    let cos = b.approx(ApproxFn::Cos, r);
    let sin = b.approx(ApproxFn::Sin, r);
    let sin = b.mul(sin, sign);
    (cos, sin)
}

/// `(a·cos − b·sin, b·cos + a·sin)`.
fn rotate(
    b: &mut KernelBuilder,
    x0: Value<F32>,
    x1: Value<F32>,
    cs: (Value<F32>, Value<F32>),
) -> (Value<F32>, Value<F32>) {
    let (cos, sin) = cs;
    let t = b.mul(x1, sin);
    let t = b.neg(t);
    let y0 = b.fma(x0, cos, t);
    let u = b.mul(x0, sin);
    let y1 = b.fma(x1, cos, u);
    (y0, y1)
}

/// Loads `spec.elems()` elements at `idx`.
fn load(b: &mut KernelBuilder, t: &Tensor, spec: RopeSpec, idx: Value<U32>) -> Vec<Value<F32>> {
    if spec.elems() == 2 && spec.access == crate::codegen::tensor::Access::Scalar {
        let one = b.const_u32(1);
        let next = b.add(idx, one);
        vec![t.load(b, idx), t.load(b, next)]
    } else {
        t.load_n(b, idx, spec.access)
    }
}

fn store(b: &mut KernelBuilder, t: &Tensor, spec: RopeSpec, idx: Value<U32>, v: &[Value<F32>]) {
    if spec.elems() == 2 && spec.access == crate::codegen::tensor::Access::Scalar {
        let one = b.const_u32(1);
        let next = b.add(idx, one);
        t.store(b, idx, v[0]);
        t.store(b, next, v[1]);
    } else {
        t.store_n(b, idx, spec.access, v);
    }
}

/// Parameters: `x, positions, y, tokens, heads, head_dim, half, chunks, exponent, sign`.
/// `half` = rotary_dim / 2; `chunks` = accesses per head's rotary part (NeoX: per half).
pub(crate) fn rope(spec: RopeSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("rope_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let positions = b.param_slice::<U32>("positions");
    let y = tensor_param(&mut b, "y", storage, true);
    let tokens = b.param::<U32>("tokens");
    let heads = b.param::<U32>("heads");
    let head_dim = b.param::<U32>("head_dim");
    let half = b.param::<U32>("half");
    let nchunks = b.param::<U32>("chunks");
    let exponent = b.param::<F32>("exponent");
    let sign = b.param::<F32>("sign");

    let elems = spec.elems();
    let tx = b.tid(Dim::X);
    let ty = b.tid(Dim::Y);
    let nx = b.ntid(Dim::X);
    let ny = b.ntid(Dim::Y);
    let cta = b.ctaid(Dim::X);
    let ncta = b.nctaid(Dim::X);
    let rot = b.shl(half, 1);
    let elems_c = b.const_u32(elems);
    let row_elems = b.mul(heads, head_dim);

    b.for_range(cta, tokens, ncta, |b, token| {
        let p = b.ld_global(&positions, token);
        let pos = b.cvt::<F32, U32>(p);
        let row0 = b.mul(token, row_elems);
        b.for_range(tx, nchunks, nx, |b, c| {
            let d0 = b.mul(c, elems_c);
            let pairs: Vec<(Value<F32>, Value<F32>)> = match spec.layout {
                RopeLayout::NeoX => (0..elems)
                    .map(|k| {
                        let k = b.const_u32(k);
                        let i = b.add(d0, k);
                        rotation(b, pos, i, exponent, sign)
                    })
                    .collect(),
                RopeLayout::Interleaved => {
                    let first = b.shr(d0, 1);
                    (0..elems / 2)
                        .map(|k| {
                            let k = b.const_u32(k);
                            let i = b.add(first, k);
                            rotation(b, pos, i, exponent, sign)
                        })
                        .collect()
                }
            };
            b.for_range(ty, heads, ny, |b, h| {
                let base = b.mad(h, head_dim, row0);
                let at = b.add(base, d0);
                match spec.layout {
                    RopeLayout::NeoX => {
                        let bt = b.add(at, half);
                        let xa = load(b, &x, spec, at);
                        let xb = load(b, &x, spec, bt);
                        let (ya, yb): (Vec<_>, Vec<_>) = (0..elems as usize)
                            .map(|k| rotate(b, xa[k], xb[k], pairs[k]))
                            .unzip();
                        store(b, &y, spec, at, &ya);
                        store(b, &y, spec, bt, &yb);
                    }
                    RopeLayout::Interleaved => {
                        let xs = load(b, &x, spec, at);
                        let mut out = Vec::with_capacity(xs.len());
                        for (k, cs) in pairs.iter().enumerate() {
                            let (y0, y1) = rotate(b, xs[2 * k], xs[2 * k + 1], *cs);
                            out.push(y0);
                            out.push(y1);
                        }
                        store(b, &y, spec, at, &out);
                    }
                }
            });
        });
        // The part of each head past the rotary dimensions passes through.
        let start = b.add(rot, tx);
        b.for_range(start, head_dim, nx, |b, d| {
            b.for_range(ty, heads, ny, |b, h| {
                let base = b.mad(h, head_dim, row0);
                let at = b.add(base, d);
                let v = x.load(b, at);
                y.store(b, at, v);
            });
        });
    });
    b.finish()
}
