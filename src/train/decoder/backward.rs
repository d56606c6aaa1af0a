//! The decoder's backward on the device, layer by layer from the loss down to the embedding,
//! writing each trained tensor's gradient into its buffer (flat-layout order).

use super::acts::{Acts, Inputs, Scratch};
use super::config::DecoderConfig;
use super::forward::{attention, batch, head, proj, rope_spec, tensor};
use super::params::ParamId;
use super::weights::Weights;
use crate::model::{LayerTensor, TensorId};
use kernel_runtime::{Buffer, Stream};
use kernels::attention::flash_backward;
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::rope::rope_backward;
use kernels::{cast, elementwise, embedding, norm, Error};

/// The gradient buffer of model tensor `id` if it is trained, else `sink`.
fn grad_or<'a>(
    w: &Weights,
    grads: &'a mut [Buffer<f32>],
    id: TensorId,
    sink: &'a mut Buffer<f32>,
) -> &'a mut Buffer<f32> {
    match w.position(ParamId::Model(id)) {
        Some(i) => &mut grads[i],
        None => sink,
    }
}

/// Queues the backward of the forward in `acts`; `s.dx_a` ends holding the gradient of the
/// embedding's output.
pub(crate) fn backward(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &Acts,
    s: &mut Scratch,
    grads: &mut [Buffer<f32>],
) -> Result<(), Error> {
    let m = cfg.model;
    let (t, h, v) = (cfg.tokens(), m.hidden, m.vocab);
    let eps = m.norm_eps;
    let plain = Epilogue::default();
    let head_id = if m.tied_embeddings {
        TensorId::Embed
    } else {
        TensorId::LmHead
    };
    // LM head: dW = dlogitsᵀ·nf (into its own part when tied, summed with the embedding's).
    if let Some(i) = w.position(ParamId::Model(head_id)) {
        let dst = if m.tied_embeddings {
            &mut s.head_part
        } else {
            &mut grads[i]
        };
        let shape = GemmShape::new(Layout::Tn, v, h, t);
        gemm(
            stream,
            &shape,
            &acts.dlogits,
            &acts.nf,
            dst,
            &plain,
            Math::Tf32,
        )?;
    }
    let shape = GemmShape::new(Layout::Nn, t, h, v);
    gemm(
        stream,
        &shape,
        &acts.dlogits,
        head(cfg, w)?,
        &mut s.dn,
        &plain,
        Math::Tf32,
    )?;
    norm::rms_norm_backward(
        stream,
        &acts.xs[m.layers],
        tensor(w, TensorId::FinalNorm)?,
        &s.dn,
        &mut s.dx_a,
        grad_or(w, grads, TensorId::FinalNorm, &mut s.gamma_sink),
        &mut s.norm_ws,
        t,
        h,
        eps,
    )?;
    for l in (0..m.layers).rev() {
        layer_backward(stream, cfg, w, inp, acts, s, grads, l)?;
    }
    if let Some(i) = w.position(ParamId::Model(TensorId::Embed)) {
        if m.tied_embeddings {
            embedding::embedding_backward(stream, &s.dx_a, &inp.ids, &mut s.embed_part, t, v, h)?;
            elementwise::add(stream, &s.embed_part, &s.head_part, &mut grads[i])?;
        } else {
            embedding::embedding_backward(stream, &s.dx_a, &inp.ids, &mut grads[i], t, v, h)?;
        }
    }
    Ok(())
}

/// Layer `l`'s backward: `s.dx_a` holds the gradient of its output on entry and of its input
/// on return.
#[allow(clippy::too_many_arguments)]
fn layer_backward(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &Acts,
    s: &mut Scratch,
    grads: &mut [Buffer<f32>],
    l: usize,
) -> Result<(), Error> {
    let m = cfg.model;
    let (t, h) = (cfg.tokens(), m.hidden);
    let eps = m.norm_eps;
    let la = &acts.layers[l];
    let p = |lt| proj(cfg, l, lt);
    let lt = |x: LayerTensor| la.lora_t.get(&x);
    let ones = &inp.ones;

    // MLP.
    p(LayerTensor::Down).backward(
        stream,
        w,
        grads,
        &la.a,
        &s.dx_a,
        &mut s.da,
        lt(LayerTensor::Down),
        &mut s.u,
        ones,
        &mut s.gemm_ws,
        t,
    )?;
    elementwise::swiglu_backward(stream, &la.gate, &la.up, &s.da, &mut s.dgate, &mut s.dup)?;
    let [dn0, dn1, _] = &mut s.dn_parts;
    p(LayerTensor::Gate).backward(
        stream,
        w,
        grads,
        &la.n2,
        &s.dgate,
        dn0,
        lt(LayerTensor::Gate),
        &mut s.u,
        ones,
        &mut s.gemm_ws,
        t,
    )?;
    p(LayerTensor::Up).backward(
        stream,
        w,
        grads,
        &la.n2,
        &s.dup,
        dn1,
        lt(LayerTensor::Up),
        &mut s.u,
        ones,
        &mut s.gemm_ws,
        t,
    )?;
    elementwise::add(stream, dn0, dn1, &mut s.dn)?;
    norm::rms_norm_backward(
        stream,
        &la.x_mid,
        tensor(w, TensorId::Layer(l, LayerTensor::PostNorm))?,
        &s.dn,
        &mut s.dxn,
        grad_or(
            w,
            grads,
            TensorId::Layer(l, LayerTensor::PostNorm),
            &mut s.gamma_sink,
        ),
        &mut s.norm_ws,
        t,
        h,
        eps,
    )?;
    elementwise::add(stream, &s.dx_a, &s.dxn, &mut s.dx_b)?;

    // Attention.
    p(LayerTensor::O).backward(
        stream,
        w,
        grads,
        &la.o,
        &s.dx_b,
        &mut s.d_o,
        lt(LayerTensor::O),
        &mut s.u,
        ones,
        &mut s.gemm_ws,
        t,
    )?;
    cast::cast(stream, &s.d_o, &mut s.dob)?;
    flash_backward(
        stream,
        &la.qb,
        &la.kb,
        &la.vb,
        &la.ob,
        &s.dob,
        &la.lse,
        batch(cfg, inp),
        attention(cfg),
        &mut s.dqb,
        &mut s.dkb,
        &mut s.dvb,
        &mut s.attn_ws,
    )?;
    cast::cast(stream, &s.dqb, &mut s.dqr)?;
    cast::cast(stream, &s.dkb, &mut s.dkr)?;
    cast::cast(stream, &s.dvb, &mut s.dv)?;
    let (hd, spec) = (m.head_dim, rope_spec(cfg));
    rope_backward(
        stream,
        &s.dqr,
        &inp.positions,
        &mut s.dq,
        t,
        m.heads_q,
        hd,
        spec,
    )?;
    rope_backward(
        stream,
        &s.dkr,
        &inp.positions,
        &mut s.dk,
        t,
        m.heads_kv,
        hd,
        spec,
    )?;
    let [dn0, dn1, dn2] = &mut s.dn_parts;
    for (x, dy, dx) in [
        (LayerTensor::Q, &s.dq, &mut *dn0),
        (LayerTensor::K, &s.dk, &mut *dn1),
        (LayerTensor::V, &s.dv, &mut *dn2),
    ] {
        p(x).backward(
            stream,
            w,
            grads,
            &la.n1,
            dy,
            dx,
            lt(x),
            &mut s.u,
            ones,
            &mut s.gemm_ws,
            t,
        )?;
    }
    elementwise::add(stream, dn0, dn1, &mut s.dn)?;
    elementwise::add(stream, &s.dn, dn2, &mut s.dn_sum)?;
    norm::rms_norm_backward(
        stream,
        &acts.xs[l],
        tensor(w, TensorId::Layer(l, LayerTensor::InputNorm))?,
        &s.dn_sum,
        &mut s.dxn,
        grad_or(
            w,
            grads,
            TensorId::Layer(l, LayerTensor::InputNorm),
            &mut s.gamma_sink,
        ),
        &mut s.norm_ws,
        t,
        h,
        eps,
    )?;
    elementwise::add(stream, &s.dx_b, &s.dxn, &mut s.dx_a)
}
