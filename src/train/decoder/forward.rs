//! The decoder's forward on the device: embedding, then per layer RMSNorm → q, k, v → RoPE →
//! causal flash attention (bf16) → o → residual, RMSNorm → SwiGLU MLP → residual; the final
//! norm, the LM head and the fused cross-entropy against the next tokens.

use super::acts::{heads, Acts, Inputs, Scratch};
use super::config::DecoderConfig;
use super::linear::{missing, Proj};
use super::weights::Weights;
use crate::model::{LayerTensor, TensorId};
use kernel_runtime::{Buffer, Stream};
use kernels::attention::{flash_forward, Attention, Batch, Mask};
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::rope::{rope, Rope, RopeLayout};
use kernels::{cast, cross_entropy, elementwise, embedding, norm, Error};

/// No target is ignored; the op still wants an index to skip.
pub(crate) const IGNORE_INDEX: i32 = -100;

/// A model tensor held in f32, or the error saying it is missing.
pub(crate) fn tensor(w: &Weights, id: TensorId) -> Result<&Buffer<f32>, Error> {
    w.f32(id).ok_or_else(|| missing(id.name()))
}

/// The projection `t` of layer `layer`.
pub(crate) fn proj(cfg: &DecoderConfig, layer: usize, t: LayerTensor) -> Proj {
    let shape = t.shape(&cfg.model);
    Proj {
        layer,
        t,
        mode: cfg.mode,
        out: shape[0],
        inp: shape[1],
    }
}

/// The attention of `cfg`: causal, scaled by `1/√head_dim`.
pub(crate) fn attention(cfg: &DecoderConfig) -> Attention {
    Attention {
        heads: heads(cfg),
        mask: Mask::Causal,
        scale: 1.0 / (cfg.model.head_dim as f32).sqrt(),
    }
}

/// RoPE as Hugging Face's Llama applies it: rotate_half pairs over the whole head.
pub(crate) fn rope_spec(cfg: &DecoderConfig) -> Rope {
    Rope {
        layout: RopeLayout::NeoX,
        theta: cfg.model.rope_theta,
        rotary_dim: cfg.model.head_dim,
    }
}

/// The batch as the attention ops take it.
pub(crate) fn batch<'a>(cfg: &DecoderConfig, inp: &'a Inputs) -> Batch<'a> {
    Batch {
        cu_seqlens: &inp.cu_seqlens,
        seqs: cfg.seqs,
        tokens: cfg.tokens(),
        max_len: cfg.seq_len,
    }
}

/// The LM head's weight: the embedding when tied.
pub(crate) fn head<'w>(cfg: &DecoderConfig, w: &'w Weights) -> Result<&'w Buffer<f32>, Error> {
    let id = if cfg.model.tied_embeddings {
        TensorId::Embed
    } else {
        TensorId::LmHead
    };
    tensor(w, id)
}

/// Queues the forward; `loss` gets `[mean loss, rows]` and `acts.dlogits` the loss's
/// gradient with respect to the logits.
pub(crate) fn forward(
    stream: &Stream,
    cfg: &DecoderConfig,
    w: &Weights,
    inp: &Inputs,
    acts: &mut Acts,
    s: &mut Scratch,
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
        norm::rms_norm(
            stream,
            x,
            layer_w(l, LayerTensor::InputNorm)?,
            &mut la.n1,
            t,
            h,
            eps,
        )?;
        let p = |lt| proj(cfg, l, lt);
        p(LayerTensor::Q).forward(
            stream,
            w,
            &la.n1,
            &mut s.q,
            la.lora_t.get_mut(&LayerTensor::Q),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        p(LayerTensor::K).forward(
            stream,
            w,
            &la.n1,
            &mut s.k,
            la.lora_t.get_mut(&LayerTensor::K),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        p(LayerTensor::V).forward(
            stream,
            w,
            &la.n1,
            &mut s.v,
            la.lora_t.get_mut(&LayerTensor::V),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        let (hd, spec) = (m.head_dim, rope_spec(cfg));
        rope(
            stream,
            &s.q,
            &inp.positions,
            &mut s.qr,
            t,
            m.heads_q,
            hd,
            spec,
        )?;
        rope(
            stream,
            &s.k,
            &inp.positions,
            &mut s.kr,
            t,
            m.heads_kv,
            hd,
            spec,
        )?;
        cast::cast(stream, &s.qr, &mut la.qb)?;
        cast::cast(stream, &s.kr, &mut la.kb)?;
        cast::cast(stream, &s.v, &mut la.vb)?;
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
        cast::cast(stream, &la.ob, &mut la.o)?;
        p(LayerTensor::O).forward(
            stream,
            w,
            &la.o,
            &mut s.proj,
            la.lora_t.get_mut(&LayerTensor::O),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        elementwise::add(stream, x, &s.proj, &mut la.x_mid)?;
        norm::rms_norm(
            stream,
            &la.x_mid,
            layer_w(l, LayerTensor::PostNorm)?,
            &mut la.n2,
            t,
            h,
            eps,
        )?;
        p(LayerTensor::Gate).forward(
            stream,
            w,
            &la.n2,
            &mut la.gate,
            la.lora_t.get_mut(&LayerTensor::Gate),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        p(LayerTensor::Up).forward(
            stream,
            w,
            &la.n2,
            &mut la.up,
            la.lora_t.get_mut(&LayerTensor::Up),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        elementwise::swiglu(stream, &la.gate, &la.up, &mut la.a)?;
        p(LayerTensor::Down).forward(
            stream,
            w,
            &la.a,
            &mut s.proj,
            la.lora_t.get_mut(&LayerTensor::Down),
            &inp.ones,
            &mut s.gemm_ws,
            t,
        )?;
        elementwise::add(stream, &la.x_mid, &s.proj, out)?;
    }
    norm::rms_norm(
        stream,
        &acts.xs[m.layers],
        tensor(w, TensorId::FinalNorm)?,
        &mut acts.nf,
        t,
        h,
        eps,
    )?;
    gemm(
        stream,
        &GemmShape::new(Layout::Nt, t, v, h),
        &acts.nf,
        head(cfg, w)?,
        &mut acts.logits,
        &Epilogue::default(),
        Math::Tf32,
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
