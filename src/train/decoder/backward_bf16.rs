//! The decoder's backward in bf16 training, layer by layer from the loss down to the
//! embedding: the residual stream's gradient stays f32 and is rounded to bf16 once before each
//! half-layer's GEMMs read it; weight gradients come out in f32 (adapter gradients in bf16).

use super::acts::Inputs;
use super::acts_bf16::{Acts16, Scratch16};
use super::config::DecoderConfig;
use super::forward::{attention, batch, proj, rope_spec, tensor};
use super::forward_bf16::head16;
use super::linear_bf16::{Grads, Out};
use super::params::ParamId;
use super::weights::Weights;
use crate::model::{LayerTensor, TensorId};
use kernel_runtime::{Buffer, Stream};
use kernels::attention::flash_backward;
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::rope::rope_backward;
use kernels::{cast, elementwise, embedding, norm, Error};

/// The f32 gradient buffer of model tensor `id` if it is trained, else `sink`.
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

/// Queues the backward of the bf16 forward in `acts`; `s.dx_a` ends holding the gradient of
/// the embedding's output.
pub(crate) fn backward16(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &Acts16,
    s: &mut Scratch16,
    grads: &mut Grads<'_>,
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
    if let Some(i) = w.position(ParamId::Model(head_id)) {
        let dst = if m.tied_embeddings {
            &mut s.head_part
        } else {
            &mut grads.f32[i]
        };
        let shape = GemmShape::new(Layout::Tn, v, h, t);
        gemm(
            stream,
            &shape,
            &acts.dlogits,
            &acts.nf,
            dst,
            &plain,
            Math::Fp32,
        )?;
    }
    let shape = GemmShape::new(Layout::Nn, t, h, v);
    let head = head16(cfg, w)?;
    gemm(
        stream,
        &shape,
        &acts.dlogits,
        head,
        &mut s.dn,
        &plain,
        Math::Fp32,
    )?;
    norm::rms_norm_backward(
        stream,
        &acts.xs[m.layers],
        tensor(w, TensorId::FinalNorm)?,
        &s.dn,
        &mut s.dx_a,
        grad_or(w, grads.f32, TensorId::FinalNorm, &mut s.gamma_sink),
        &mut s.norm_ws,
        t,
        h,
        eps,
    )?;
    for l in (0..m.layers).rev() {
        layer_backward16(stream, cfg, w, inp, acts, s, grads, l)?;
    }
    if let Some(i) = w.position(ParamId::Model(TensorId::Embed)) {
        if m.tied_embeddings {
            embedding::embedding_backward(stream, &s.dx_a, &inp.ids, &mut s.embed_part, t, v, h)?;
            elementwise::add(stream, &s.embed_part, &s.head_part, &mut grads.f32[i])?;
        } else {
            embedding::embedding_backward(stream, &s.dx_a, &inp.ids, &mut grads.f32[i], t, v, h)?;
        }
    }
    Ok(())
}

/// Layer `l`'s backward: `s.dx_a` holds the gradient of its output on entry and of its input
/// on return.
#[allow(clippy::too_many_arguments)]
fn layer_backward16(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &Acts16,
    s: &mut Scratch16,
    grads: &mut Grads<'_>,
    l: usize,
) -> Result<(), Error> {
    let m = cfg.model;
    let (t, h) = (cfg.tokens(), m.hidden);
    let eps = m.norm_eps;
    let la = &acts.layers[l];
    let p = |lt| proj(cfg, l, lt);
    let lt = |x: LayerTensor| la.lora_t.get(&x);

    // MLP.
    cast::cast(stream, &s.dx_a, &mut s.dy)?;
    p(LayerTensor::Down).backward16(
        stream,
        w,
        grads,
        &la.a,
        &s.dy,
        Out::Bf16(&mut s.da),
        lt(LayerTensor::Down),
        &mut s.u,
        &s.ones,
        &mut s.wide,
        &mut s.gemm_ws,
        t,
    )?;
    elementwise::swiglu_backward(stream, &la.gate, &la.up, &s.da, &mut s.dgate, &mut s.dup)?;
    let [dn0, dn1, _] = &mut s.dn_parts;
    for (x, dy, dx) in [
        (LayerTensor::Gate, &s.dgate, &mut *dn0),
        (LayerTensor::Up, &s.dup, &mut *dn1),
    ] {
        p(x).backward16(
            stream,
            w,
            grads,
            &la.n2,
            dy,
            Out::F32(dx),
            lt(x),
            &mut s.u,
            &s.ones,
            &mut s.wide,
            &mut s.gemm_ws,
            t,
        )?;
    }
    elementwise::add(stream, dn0, dn1, &mut s.dn)?;
    norm::rms_norm_backward(
        stream,
        &la.x_mid,
        tensor(w, TensorId::Layer(l, LayerTensor::PostNorm))?,
        &s.dn,
        &mut s.dxn,
        grad_or(
            w,
            grads.f32,
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
    cast::cast(stream, &s.dx_b, &mut s.dy)?;
    p(LayerTensor::O).backward16(
        stream,
        w,
        grads,
        &la.ob,
        &s.dy,
        Out::Bf16(&mut s.dob),
        lt(LayerTensor::O),
        &mut s.u,
        &s.ones,
        &mut s.wide,
        &mut s.gemm_ws,
        t,
    )?;
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
    let (hd, spec) = (m.head_dim, rope_spec(cfg));
    rope_backward(
        stream,
        &s.dqb,
        &inp.positions,
        &mut s.dq,
        t,
        m.heads_q,
        hd,
        spec,
    )?;
    rope_backward(
        stream,
        &s.dkb,
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
        (LayerTensor::V, &s.dvb, &mut *dn2),
    ] {
        p(x).backward16(
            stream,
            w,
            grads,
            &la.n1,
            dy,
            Out::F32(dx),
            lt(x),
            &mut s.u,
            &s.ones,
            &mut s.wide,
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
            grads.f32,
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
