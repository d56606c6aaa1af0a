//! The decoder step's device buffers besides the weights: the batch, each layer's saved
//! activations, and the scratch the backward reuses layer after layer.

use super::config::DecoderConfig;
use super::linear::projection_workspace;
use crate::model::LayerTensor;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::{flash_backward_workspace, Heads};
use kernels::cross_entropy::cross_entropy_workspace;
use kernels::gemm::{GemmWorkspace, Math};
use kernels::{norm, Error};
use std::collections::HashMap;

/// The batch: token ids and next-token targets (refreshed before every step), and the fixed
/// positions and sequence offsets of `seqs` windows of `seq_len`.
pub(crate) struct Inputs {
    pub ids: Buffer<u32>,
    pub targets: Buffer<i32>,
    pub positions: Buffer<u32>,
    pub cu_seqlens: Buffer<u32>,
    /// `tokens` ones, for the bias sums.
    pub ones: Buffer<f32>,
}

/// What one layer's forward keeps for its backward.
pub(crate) struct LayerActs {
    pub x_mid: Buffer<f32>,
    pub n1: Buffer<f32>,
    pub qb: Buffer<Bf16>,
    pub kb: Buffer<Bf16>,
    pub vb: Buffer<Bf16>,
    pub ob: Buffer<Bf16>,
    pub o: Buffer<f32>,
    pub lse: Buffer<f32>,
    pub n2: Buffer<f32>,
    pub gate: Buffer<f32>,
    pub up: Buffer<f32>,
    pub a: Buffer<f32>,
    /// `x·Aᵀ` of each adapted projection (QLoRA only).
    pub lora_t: HashMap<LayerTensor, Buffer<f32>>,
}

/// The forward's activations.
pub(crate) struct Acts {
    /// The residual stream: the embedding, then each layer's output.
    pub xs: Vec<Buffer<f32>>,
    pub layers: Vec<LayerActs>,
    pub nf: Buffer<f32>,
    pub logits: Buffer<f32>,
    pub dlogits: Buffer<f32>,
    pub row_loss: Buffer<f32>,
    /// The cross-entropy's workspace (zeroed once; the kernel leaves it so).
    pub ce_workspace: Buffer<u32>,
}

/// Buffers reused by every layer.
pub(crate) struct Scratch {
    pub q: Buffer<f32>,
    pub k: Buffer<f32>,
    pub v: Buffer<f32>,
    pub qr: Buffer<f32>,
    pub kr: Buffer<f32>,
    pub proj: Buffer<f32>,
    /// The gradient of the residual stream, in two halves of a layer.
    pub dx_a: Buffer<f32>,
    pub dx_b: Buffer<f32>,
    pub dxn: Buffer<f32>,
    pub dn: Buffer<f32>,
    pub dn_sum: Buffer<f32>,
    pub dn_parts: [Buffer<f32>; 3],
    pub da: Buffer<f32>,
    pub dgate: Buffer<f32>,
    pub dup: Buffer<f32>,
    pub d_o: Buffer<f32>,
    pub dob: Buffer<Bf16>,
    pub dqb: Buffer<Bf16>,
    pub dkb: Buffer<Bf16>,
    pub dvb: Buffer<Bf16>,
    pub dqr: Buffer<f32>,
    pub dkr: Buffer<f32>,
    pub dq: Buffer<f32>,
    pub dk: Buffer<f32>,
    pub dv: Buffer<f32>,
    /// Where a frozen norm's γ gradient goes.
    pub gamma_sink: Buffer<f32>,
    /// The embedding's and the tied head's gradient, summed after.
    pub embed_part: Buffer<f32>,
    pub head_part: Buffer<f32>,
    /// LoRA's `scale·dy·B`, `tokens × rank`.
    pub u: Buffer<f32>,
    pub norm_ws: Buffer<f32>,
    pub attn_ws: Buffer<f32>,
    /// Split-k's partials for every projection's products, so that they split inside the
    /// captured step.
    pub gemm_ws: GemmWorkspace,
}

impl Inputs {
    pub fn new(stream: &Stream, cfg: &DecoderConfig) -> Result<Inputs, Error> {
        let t = cfg.tokens();
        let positions: Vec<u32> = (0..t).map(|i| (i % cfg.seq_len) as u32).collect();
        let cu: Vec<u32> = (0..=cfg.seqs).map(|s| (s * cfg.seq_len) as u32).collect();
        Ok(Inputs {
            ids: Buffer::zeros(stream, t)?,
            targets: Buffer::zeros(stream, t)?,
            positions: Buffer::from_host(stream, &positions)?,
            cu_seqlens: Buffer::from_host(stream, &cu)?,
            ones: Buffer::from_host(stream, &vec![1.0; t])?,
        })
    }
}

/// The attention heads of `cfg`.
pub(crate) fn heads(cfg: &DecoderConfig) -> Heads {
    Heads {
        q: cfg.model.heads_q,
        kv: cfg.model.heads_kv,
        dim: cfg.model.head_dim,
    }
}

impl Acts {
    pub fn new(stream: &Stream, cfg: &DecoderConfig) -> Result<Acts, Error> {
        let m = cfg.model;
        let (t, h, f, v) = (cfg.tokens(), m.hidden, m.ffn, m.vocab);
        let (q, kv) = (m.heads_q * m.head_dim, m.kv_width());
        let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
        let layer = || -> Result<LayerActs, Error> {
            let mut lora_t = HashMap::new();
            if cfg.mode.rank() > 0 {
                for p in crate::model::LayerTensor::PROJECTIONS {
                    lora_t.insert(p, f32s(t * cfg.mode.rank())?);
                }
            }
            Ok(LayerActs {
                x_mid: f32s(t * h)?,
                n1: f32s(t * h)?,
                qb: bf16s(t * q)?,
                kb: bf16s(t * kv)?,
                vb: bf16s(t * kv)?,
                ob: bf16s(t * q)?,
                o: f32s(t * q)?,
                lse: f32s(m.heads_q * t)?,
                n2: f32s(t * h)?,
                gate: f32s(t * f)?,
                up: f32s(t * f)?,
                a: f32s(t * f)?,
                lora_t,
            })
        };
        Ok(Acts {
            xs: (0..=m.layers)
                .map(|_| f32s(t * h))
                .collect::<Result<_, _>>()?,
            layers: (0..m.layers).map(|_| layer()).collect::<Result<_, _>>()?,
            nf: f32s(t * h)?,
            logits: f32s(t * v)?,
            dlogits: f32s(t * v)?,
            row_loss: f32s(t)?,
            ce_workspace: Buffer::zeros(stream, cross_entropy_workspace(t, v))?,
        })
    }
}

impl Scratch {
    pub fn new(stream: &Stream, cfg: &DecoderConfig) -> Result<Scratch, Error> {
        let m = cfg.model;
        let (t, h, f, v) = (cfg.tokens(), m.hidden, m.ffn, m.vocab);
        let (q, kv) = (m.heads_q * m.head_dim, m.kv_width());
        let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
        Ok(Scratch {
            q: f32s(t * q)?,
            k: f32s(t * kv)?,
            v: f32s(t * kv)?,
            qr: f32s(t * q)?,
            kr: f32s(t * kv)?,
            proj: f32s(t * h)?,
            dx_a: f32s(t * h)?,
            dx_b: f32s(t * h)?,
            dxn: f32s(t * h)?,
            dn: f32s(t * h)?,
            dn_sum: f32s(t * h)?,
            dn_parts: [f32s(t * h)?, f32s(t * h)?, f32s(t * h)?],
            da: f32s(t * f)?,
            dgate: f32s(t * f)?,
            dup: f32s(t * f)?,
            d_o: f32s(t * q)?,
            dob: bf16s(t * q)?,
            dqb: bf16s(t * q)?,
            dkb: bf16s(t * kv)?,
            dvb: bf16s(t * kv)?,
            dqr: f32s(t * q)?,
            dkr: f32s(t * kv)?,
            dq: f32s(t * q)?,
            dk: f32s(t * kv)?,
            dv: f32s(t * kv)?,
            gamma_sink: f32s(h)?,
            embed_part: f32s(v * h)?,
            head_part: f32s(v * h)?,
            u: f32s((t * cfg.mode.rank()).max(1))?,
            norm_ws: f32s(norm::rms_norm_backward_workspace(t, h))?,
            attn_ws: f32s(flash_backward_workspace(t, heads(cfg))?)?,
            gemm_ws: projection_workspace::<f32>(stream, cfg, Math::Tf32)?,
        })
    }
}
