//! The decoder's forward in bf16 training: the same ops as [`super::forward`], with bf16
//! GEMM inputs (the norms' outputs rounded once, q/k/v, gate/up and SwiGLU written in bf16 by
//! the ops that make them) and the residual stream in f32; the logits are bf16 and the
//! cross-entropy sums in f32.

use super::acts::Inputs;
use super::acts_bf16::{Acts16, Scratch16};
use super::config::DecoderConfig;
use super::forward::{attention, batch, proj, rope_spec, tensor, IGNORE_INDEX};
use super::linear::missing;
use super::linear_bf16::Out;
use super::weights::Weights;
use crate::model::{LayerTensor, TensorId};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::flash_forward;
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::rope::rope;
use kernels::{cast, cross_entropy, elementwise, embedding, norm, Error};

/// The LM head's bf16 weight: the embedding's copy when tied.
pub(crate) fn head16<'w>(cfg: &DecoderConfig, w: &'w Weights) -> Result<&'w Buffer<Bf16>, Error> {
    let id = if cfg.model.tied_embeddings {
        TensorId::Embed
    } else {
        TensorId::LmHead
    };
    w.bf16(id)
        .ok_or_else(|| missing(format!("the bf16 copy of {}", id.name())))
}

/// RMSNorm of the f32 rows `x` into the bf16 `y`, through the f32 `normed`.
#[allow(clippy::too_many_arguments)]
fn norm16(
    stream: &Stream,
    x: &Buffer<f32>,
    gamma: &Buffer<f32>,
    normed: &mut Buffer<f32>,
    y: &mut Buffer<Bf16>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    norm::rms_norm(stream, x, gamma, normed, rows, cols, eps)?;
    cast::cast(stream, normed, y)
}

/// Queues the bf16 forward; `loss` gets `[mean loss, rows]` and `acts.dlogits` the loss's
/// gradient with respect to the logits.
pub(crate) fn forward16(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &mut Acts16,
    s: &mut Scratch16,
    loss: &mut Buffer<f32>,
) -> Result<(), Error> {
    let m = cfg.model;
    let (t, h, v) = (cfg.tokens(), m.hidden, m.vocab);
    let eps = m.norm_eps;
    let layer_w = |l: usize, lt: LayerTensor| tensor(w, TensorId::Layer(l, lt));
    embedding::embedding(
        stream,
        tensor(w, TensorId::Embed)?,
        &inp.ids,
        &mut acts.xs[0],
        t,
        v,
        h,
    )?;
    for l in 0..m.layers {
        let (done, rest) = acts.xs.split_at_mut(l + 1);
        let (x, out) = (&done[l], &mut rest[0]);
        let la = &mut acts.layers[l];
        let gamma = layer_w(l, LayerTensor::InputNorm)?;
        norm16(stream, x, gamma, &mut s.normed, &mut la.n1, t, h, eps)?;
        let p = |lt| proj(cfg, l, lt);
        for (lt, y) in [
            (LayerTensor::Q, &mut s.q),
            (LayerTensor::K, &mut s.k),
            (LayerTensor::V, &mut la.vb),
        ] {
            let t_buf = la.lora_t.get_mut(&lt);
            p(lt).forward16(
                stream,
                w,
                &la.n1,
                Out::Bf16(y),
                t_buf,
                &s.ones,
                &mut s.wide,
                &mut s.gemm_ws,
                t,
            )?;
        }
        let (hd, spec) = (m.head_dim, rope_spec(cfg));
        rope(
            stream,
            &s.q,
            &inp.positions,
            &mut la.qb,
            t,
            m.heads_q,
            hd,
            spec,
        )?;
        rope(
            stream,
            &s.k,
            &inp.positions,
            &mut la.kb,
            t,
            m.heads_kv,
            hd,
            spec,
        )?;
        flash_forward(
            stream,
            &la.qb,
            &la.kb,
            &la.vb,
            batch(cfg, inp),
            attention(cfg),
            &mut la.ob,
            &mut la.lse,
        )?;
        p(LayerTensor::O).forward16(
            stream,
            w,
            &la.ob,
            Out::F32(&mut s.proj),
            la.lora_t.get_mut(&LayerTensor::O),
            &s.ones,
            &mut s.wide,
            &mut s.gemm_ws,
            t,
        )?;
        elementwise::add(stream, x, &s.proj, &mut la.x_mid)?;
        let gamma = layer_w(l, LayerTensor::PostNorm)?;
        norm16(
            stream,
            &la.x_mid,
            gamma,
            &mut s.normed,
            &mut la.n2,
            t,
            h,
            eps,
        )?;
        for (lt, y) in [
            (LayerTensor::Gate, &mut la.gate),
            (LayerTensor::Up, &mut la.up),
        ] {
            let t_buf = la.lora_t.get_mut(&lt);
            p(lt).forward16(
                stream,
                w,
                &la.n2,
                Out::Bf16(y),
                t_buf,
                &s.ones,
                &mut s.wide,
                &mut s.gemm_ws,
                t,
            )?;
        }
        elementwise::swiglu(stream, &la.gate, &la.up, &mut la.a)?;
        p(LayerTensor::Down).forward16(
            stream,
            w,
            &la.a,
            Out::F32(&mut s.proj),
            la.lora_t.get_mut(&LayerTensor::Down),
            &s.ones,
            &mut s.wide,
            &mut s.gemm_ws,
            t,
        )?;
        elementwise::add(stream, &la.x_mid, &s.proj, out)?;
    }
    let gamma = tensor(w, TensorId::FinalNorm)?;
    norm16(
        stream,
        &acts.xs[m.layers],
        gamma,
        &mut s.normed,
        &mut acts.nf,
        t,
        h,
        eps,
    )?;
    gemm(
        stream,
        &GemmShape::new(Layout::Nt, t, v, h),
        &acts.nf,
        head16(cfg, w)?,
        &mut acts.logits,
        &Epilogue::default(),
        Math::Fp32,
    )?;
    cross_entropy::cross_entropy(
        stream,
        &acts.logits,
        &inp.targets,
        &mut acts.dlogits,
        &mut acts.row_loss,
        loss,
        &mut acts.ce_workspace,
        t,
        v,
        IGNORE_INDEX,
    )
}
