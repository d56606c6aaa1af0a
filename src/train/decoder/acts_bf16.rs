//! The bf16 step's device buffers besides the weights: what each layer's forward keeps in bf16
//! for its backward, and the scratch the backward reuses. The residual stream, its gradient
//! and the norms' inputs and outputs stay f32; what a GEMM reads is bf16.

use super::acts::heads;
use super::config::DecoderConfig;
use super::linear::projection_workspace;
use crate::model::LayerTensor;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::flash_backward_workspace;
use kernels::cross_entropy::cross_entropy_workspace;
use kernels::gemm::{GemmWorkspace, Math};
use kernels::{norm, Error};
use std::collections::HashMap;

/// What one layer's forward keeps for its backward.
pub(crate) struct LayerActs16 {
    pub x_mid: Buffer<f32>,
    /// The norms' outputs, the q/k/v and gate/up inputs.
    pub n1: Buffer<Bf16>,
    pub n2: Buffer<Bf16>,
    pub qb: Buffer<Bf16>,
    pub kb: Buffer<Bf16>,
    pub vb: Buffer<Bf16>,
    /// The attention's output, the o projection's input.
    pub ob: Buffer<Bf16>,
    pub lse: Buffer<f32>,
    pub gate: Buffer<Bf16>,
    pub up: Buffer<Bf16>,
    /// SwiGLU's output, the down projection's input.
    pub a: Buffer<Bf16>,
    /// `x·Aᵀ` of each adapted projection (QLoRA only).
    pub lora_t: HashMap<LayerTensor, Buffer<Bf16>>,
}

/// The forward's activations.
pub(crate) struct Acts16 {
    /// The residual stream: the embedding, then each layer's output.
    pub xs: Vec<Buffer<f32>>,
    pub layers: Vec<LayerActs16>,
    /// The final norm's output, the head's input.
    pub nf: Buffer<Bf16>,
    /// Logits and their gradient in bf16, as autocast leaves them; the loss sums in f32.
    pub logits: Buffer<Bf16>,
    pub dlogits: Buffer<Bf16>,
    pub row_loss: Buffer<f32>,
    /// The cross-entropy's workspace (zeroed once; the kernel leaves it so).
    pub ce_workspace: Buffer<u32>,
}

/// Buffers reused by every layer.
pub(crate) struct Scratch16 {
    /// A norm's f32 output before it is rounded for the GEMMs.
    pub normed: Buffer<f32>,
    /// q and k before RoPE.
    pub q: Buffer<Bf16>,
    pub k: Buffer<Bf16>,
    /// The o or down projection's output, added to the residual stream.
    pub proj: Buffer<f32>,
    /// A bf16 product on its way to an f32 buffer (QLoRA's NF4 products write bf16).
    pub wide: Buffer<Bf16>,
    /// The gradient of the residual stream, in two halves of a layer, and in bf16.
    pub dx_a: Buffer<f32>,
    pub dx_b: Buffer<f32>,
    pub dy: Buffer<Bf16>,
    pub dxn: Buffer<f32>,
    pub dn: Buffer<f32>,
    pub dn_sum: Buffer<f32>,
    pub dn_parts: [Buffer<f32>; 3],
    pub da: Buffer<Bf16>,
    pub dgate: Buffer<Bf16>,
    pub dup: Buffer<Bf16>,
    pub dob: Buffer<Bf16>,
    pub dqb: Buffer<Bf16>,
    pub dkb: Buffer<Bf16>,
    pub dvb: Buffer<Bf16>,
    pub dq: Buffer<Bf16>,
    pub dk: Buffer<Bf16>,
    /// `tokens` bf16 ones, for the bias sums.
    pub ones: Buffer<Bf16>,
    /// Where a frozen norm's γ gradient goes.
    pub gamma_sink: Buffer<f32>,
    /// The embedding's and the tied head's gradient, summed after.
    pub embed_part: Buffer<f32>,
    pub head_part: Buffer<f32>,
    /// LoRA's `scale·dy·B`, `tokens × rank`.
    pub u: Buffer<Bf16>,
    pub norm_ws: Buffer<f32>,
    pub attn_ws: Buffer<f32>,
    /// Split-k's partials for every projection's products, so that they split inside the
    /// captured step.
    pub gemm_ws: GemmWorkspace,
}

impl Acts16 {
    pub fn new(stream: &Stream, cfg: &DecoderConfig) -> Result<Acts16, Error> {
        let m = cfg.model;
        let (t, h, f, v) = (cfg.tokens(), m.hidden, m.ffn, m.vocab);
        let (q, kv) = (m.heads_q * m.head_dim, m.kv_width());
        let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
        let layer = || -> Result<LayerActs16, Error> {
            let mut lora_t = HashMap::new();
            if cfg.mode.rank() > 0 {
                for p in LayerTensor::PROJECTIONS {
                    lora_t.insert(p, bf16s(t * cfg.mode.rank())?);
                }
            }
            Ok(LayerActs16 {
                x_mid: f32s(t * h)?,
                n1: bf16s(t * h)?,
                n2: bf16s(t * h)?,
                qb: bf16s(t * q)?,
                kb: bf16s(t * kv)?,
                vb: bf16s(t * kv)?,
                ob: bf16s(t * q)?,
                lse: f32s(m.heads_q * t)?,
                gate: bf16s(t * f)?,
                up: bf16s(t * f)?,
                a: bf16s(t * f)?,
                lora_t,
            })
        };
        Ok(Acts16 {
            xs: (0..=m.layers)
                .map(|_| f32s(t * h))
                .collect::<Result<_, _>>()?,
            layers: (0..m.layers).map(|_| layer()).collect::<Result<_, _>>()?,
            nf: bf16s(t * h)?,
            logits: bf16s(t * v)?,
            dlogits: bf16s(t * v)?,
            row_loss: f32s(t)?,
            ce_workspace: Buffer::zeros(stream, cross_entropy_workspace(t, v))?,
        })
    }
}

impl Scratch16 {
    pub fn new(stream: &Stream, cfg: &DecoderConfig) -> Result<Scratch16, Error> {
        let m = cfg.model;
        let (t, h, f, v) = (cfg.tokens(), m.hidden, m.ffn, m.vocab);
        let (q, kv) = (m.heads_q * m.head_dim, m.kv_width());
        let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
        Ok(Scratch16 {
            normed: f32s(t * h)?,
            q: bf16s(t * q)?,
            k: bf16s(t * kv)?,
            proj: f32s(t * h)?,
            wide: bf16s(t * h)?,
            dx_a: f32s(t * h)?,
            dx_b: f32s(t * h)?,
            dy: bf16s(t * h)?,
            dxn: f32s(t * h)?,
            dn: f32s(t * h)?,
            dn_sum: f32s(t * h)?,
            dn_parts: [f32s(t * h)?, f32s(t * h)?, f32s(t * h)?],
            da: bf16s(t * f)?,
            dgate: bf16s(t * f)?,
            dup: bf16s(t * f)?,
            dob: bf16s(t * q)?,
            dqb: bf16s(t * q)?,
            dkb: bf16s(t * kv)?,
            dvb: bf16s(t * kv)?,
            dq: bf16s(t * q)?,
            dk: bf16s(t * kv)?,
            ones: Buffer::from_host(stream, &vec![Bf16::from_f32(1.0); t])?,
            gamma_sink: f32s(h)?,
            embed_part: f32s(v * h)?,
            head_part: f32s(v * h)?,
            u: bf16s((t * cfg.mode.rank()).max(1))?,
            norm_ws: f32s(norm::rms_norm_backward_workspace(t, h))?,
            attn_ws: f32s(flash_backward_workspace(t, heads(cfg))?)?,
            gemm_ws: projection_workspace::<Bf16>(stream, cfg, Math::Fp32)?,
        })
    }
}
