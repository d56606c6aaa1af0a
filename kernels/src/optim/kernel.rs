//! The AdamW step kernel: one CTA per chunk of the work table, each chunk inside one tensor
//! (whose weight-decay factor it reads once), 16-byte vectors over the chunk and a scalar loop
//! for its last elements.
//!
//! Per element, as PyTorch's `AdamW` (decoupled weight decay):
//! `p ← p·(1 − lr·wd_t)`, `m ← β1·m + (1−β1)·g`, `v ← β2·v + (1−β2)·g²`,
//! `p ← p − step_size · m / (√v · inv_sqrt_bc2 + eps)` with `step_size = lr / (1 − β1^t)` and
//! `inv_sqrt_bc2 = 1 / √(1 − β2^t)` computed on the host, or, in the `_device_step` variants,
//! read from the factors a [`DeviceStep`](super::DeviceStep) keeps on the device.

use crate::codegen::map::{load_run, step_elems, store_run};
use crate::codegen::math;
use crate::codegen::tensor::{tensor_param_of, Format, Tensor};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::{Dim, Kernel};

/// Gradient format × whether a bf16 copy of the parameters is written × whether gradients
/// are scaled by a clip scale read from device memory × whether the step's bias-correction
/// factors are read from device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AdamSpec {
    pub grads: Format,
    pub copy: bool,
    pub scaled: bool,
    pub device_step: bool,
}

/// Every specialization, in [`spec_index`] order.
pub(crate) const SPECS: [AdamSpec; 16] = {
    let mut out = [AdamSpec {
        grads: Format::F32,
        copy: false,
        scaled: false,
        device_step: false,
    }; 16];
    let mut i = 0;
    while i < 16 {
        out[i] = AdamSpec {
            grads: if i & 4 == 0 {
                Format::F32
            } else {
                Format::Bf16
            },
            copy: i & 2 != 0,
            scaled: i & 1 != 0,
            device_step: i & 8 != 0,
        };
        i += 1;
    }
    out
};

pub(crate) fn spec_index(spec: AdamSpec) -> usize {
    spec.device_step as usize * 8
        + (spec.grads == Format::Bf16) as usize * 4
        + spec.copy as usize * 2
        + spec.scaled as usize
}

struct Hyper {
    beta1: Value<F32>,
    one_minus_beta1: Value<F32>,
    beta2: Value<F32>,
    one_minus_beta2: Value<F32>,
    eps: Value<F32>,
    step_size: Value<F32>,
    inv_sqrt_bc2: Value<F32>,
    decay: Value<F32>,
}

/// Updates one element; returns `(p, m, v)`.
fn update(
    b: &mut KernelBuilder,
    h: &Hyper,
    p: Value<F32>,
    g: Value<F32>,
    m: Value<F32>,
    v: Value<F32>,
) -> (Value<F32>, Value<F32>, Value<F32>) {
    let p = b.mul(p, h.decay);
    let gm = b.mul(h.one_minus_beta1, g);
    let m = b.fma(h.beta1, m, gm);
    let gg = b.mul(g, g);
    let gv = b.mul(h.one_minus_beta2, gg);
    let v = b.fma(h.beta2, v, gv);
    let root = math::sqrt(b, v);
    let denom = b.fma(root, h.inv_sqrt_bc2, h.eps);
    let ratio = b.div(m, denom);
    let neg = b.neg(h.step_size);
    let p = b.fma(neg, ratio, p);
    (p, m, v)
}

/// Parameters: `params, grads, m, v, [copy], [norm_scale], [factors], chunks, decay, lr,
/// beta1, beta2, eps, weight_decay, [step_size, inv_sqrt_bc2]`. With `norm_scale`, every
/// gradient is first multiplied by `norm_scale[1]` (the clip scale `clip::grad_norm` leaves
/// there). With `factors` (the device-step variants), `step_size` and `inv_sqrt_bc2` are
/// `factors[0]` and `factors[1]` instead of launch scalars.
pub(crate) fn adamw(spec: AdamSpec) -> Kernel {
    let copy_tag = if spec.copy { "_bf16copy" } else { "" };
    let scale_tag = if spec.scaled { "_clipped" } else { "" };
    let step_tag = if spec.device_step { "_device_step" } else { "" };
    let mut b = KernelBuilder::new(format!(
        "adamw_grad_{}{copy_tag}{scale_tag}{step_tag}",
        spec.grads.suffix()
    ));
    let params = tensor_param_of(&mut b, "params", Format::F32, true);
    let grads = tensor_param_of(&mut b, "grads", spec.grads, false);
    let m = tensor_param_of(&mut b, "m", Format::F32, true);
    let v = tensor_param_of(&mut b, "v", Format::F32, true);
    let copy = spec
        .copy
        .then(|| tensor_param_of(&mut b, "copy", Format::Bf16, true));
    let norm_scale = spec
        .scaled
        .then(|| tensor_param_of(&mut b, "norm_scale", Format::F32, false));
    let factors = spec
        .device_step
        .then(|| tensor_param_of(&mut b, "factors", Format::F32, false));
    let chunks = b.param_slice::<U32>("chunks");
    let decay_table = b.param_slice::<F32>("decay");
    let lr = b.param::<F32>("lr");
    let beta1 = b.param::<F32>("beta1");
    let beta2 = b.param::<F32>("beta2");
    let eps = b.param::<F32>("eps");
    let weight_decay = b.param::<F32>("weight_decay");
    let (step_size, inv_sqrt_bc2) = match &factors {
        Some(f) => {
            let i0 = b.const_u32(0);
            let i1 = b.const_u32(1);
            (f.load(&mut b, i0), f.load(&mut b, i1))
        }
        None => (b.param::<F32>("step_size"), b.param::<F32>("inv_sqrt_bc2")),
    };

    let chunk = b.ctaid(Dim::X);
    let three = b.const_u32(3);
    let entry = b.mul(chunk, three);
    let start = b.ld_global(&chunks, entry);
    let one = b.const_u32(1);
    let e1 = b.add(entry, one);
    let end = b.ld_global(&chunks, e1);
    let e2 = b.add(e1, one);
    let tensor = b.ld_global(&chunks, e2);
    let mask = b.ld_global(&decay_table, tensor);
    let lr_wd = b.mul(lr, weight_decay);
    let lr_wd = b.mul(lr_wd, mask);
    let onef = b.const_f32(1.0);
    let decay = b.sub(onef, lr_wd);
    let grad_scale = norm_scale.map(|t| {
        let i1 = b.const_u32(1);
        t.load(&mut b, i1)
    });
    let h = Hyper {
        beta1,
        one_minus_beta1: b.sub(onef, beta1),
        beta2,
        one_minus_beta2: b.sub(onef, beta2),
        eps,
        step_size,
        inv_sqrt_bc2,
        decay,
    };

    let mut formats = vec![Format::F32, spec.grads];
    if spec.copy {
        formats.push(Format::Bf16);
    }
    let step = step_elems(formats);
    let shift = step.trailing_zeros();
    let tid = b.tid(Dim::X);
    let ntid = b.ntid(Dim::X);
    let len = b.sub(end, start);
    let nvec = b.shr(len, shift);
    let run = |b: &mut KernelBuilder, idx: Value<U32>, count: u32, vector: bool| {
        let load = |b: &mut KernelBuilder, t: &Tensor| {
            if vector {
                load_run(b, t, idx, count)
            } else {
                vec![t.load(b, idx)]
            }
        };
        let ps = load(b, &params);
        let mut gs = load(b, &grads);
        if let Some(scale) = grad_scale {
            gs = gs.iter().map(|&g| b.mul(g, scale)).collect();
        }
        let ms = load(b, &m);
        let vs = load(b, &v);
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..ps.len() {
            let (p, mm, vv) = update(b, &h, ps[i], gs[i], ms[i], vs[i]);
            out.0.push(p);
            out.1.push(mm);
            out.2.push(vv);
        }
        let mut targets = vec![(&params, &out.0), (&m, &out.1), (&v, &out.2)];
        if let Some(c) = &copy {
            targets.push((c, &out.0));
        }
        for (t, vals) in targets {
            if vector {
                store_run(b, t, idx, vals);
            } else {
                t.store(b, idx, vals[0]);
            }
        }
    };
    b.for_range(tid, nvec, ntid, |b, i| {
        let off = b.shl(i, shift);
        let idx = b.add(start, off);
        run(b, idx, step, true);
    });
    let done = b.shl(nvec, shift);
    let tail = b.add(start, done);
    let first = b.add(tail, tid);
    b.for_range(first, end, ntid, |b, idx| run(b, idx, 1, false));
    b.finish()
}
