//! The decoder on the device: every buffer one training step touches, and the step itself
//! (forward, backward, clipping, AdamW) queued as launches of the `kernels` ops with no host
//! round trip, so it can be captured in a graph. The flat `params` (with `grads`, `m`, `v`)
//! in the optimizer's layout are the source of truth; the per-tensor buffers are copied out
//! of and into them each step. In bf16 AdamW also writes the flat bf16 copy the GEMMs' weights
//! are copied out of.

use super::acts::{Acts, Inputs, Scratch};
use super::acts_bf16::{Acts16, Scratch16};
use super::backward::backward;
use super::backward_bf16::backward16;
use super::config::{DecoderConfig, Precision};
use super::forward::forward;
use super::forward_bf16::forward16;
use super::linear_bf16::Grads;
use super::params::{trainable, Mode, ParamId};
use super::weights::{bf16_gradient_buffers, gradient_buffers, Weights};
use crate::model::NamedTensors;
use crate::train::grad_reduce::GradReducer;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::optim::{AdamW, AdamWState, DeviceStep, ParamLayout};
use kernels::{cast, clip, Error};

/// The activations and scratch of the step's precision.
enum Activations {
    Tf32(Acts, Scratch),
    Bf16(Acts16, Scratch16),
}

/// Gradients an op writes in bf16 (QLoRA's adapters in bf16 training): one buffer per
/// tensor, gathered into a flat bf16 buffer and widened into the f32 `grads` in one launch.
struct Bf16Grads {
    per_tensor: Vec<Buffer<Bf16>>,
    flat: Buffer<Bf16>,
}

pub(crate) struct DecoderDevice {
    cfg: DecoderConfig,
    pub inputs: Inputs,
    pub weights: Weights,
    grads_per_tensor: Vec<Buffer<f32>>,
    bf16_grads: Option<Bf16Grads>,
    activations: Activations,
    pub opt: AdamW,
    pub params: Buffer<f32>,
    /// In bf16, AdamW's bf16 copy of `params`.
    params_bf16: Option<Buffer<Bf16>>,
    pub grads: Buffer<f32>,
    pub m: Buffer<f32>,
    pub v: Buffer<f32>,
    pub step: DeviceStep,
    pub loss: Buffer<f32>,
    /// `[global grad norm, clip scale]`.
    pub norm_scale: Buffer<f32>,
    clip_workspace: Buffer<f32>,
    /// Averages the gradient and loss over the ranks of a data-parallel run.
    pub reducer: Option<GradReducer>,
}

/// The trained tensors of `init` (by name) placed in a flat buffer of `layout`, padding zero.
pub(crate) fn flatten(layout: &ParamLayout, ids: &[ParamId], init: &NamedTensors) -> Vec<f32> {
    let mut flat = vec![0.0; layout.total()];
    for (i, p) in ids.iter().enumerate() {
        if let (Some(range), Some(t)) = (layout.range(i), init.get(&p.name())) {
            flat[range].copy_from_slice(&t.data);
        }
    }
    flat
}

impl DecoderDevice {
    /// Uploads `base` (every model tensor) and the trained tensors' starting values `init`
    /// (the model's own for full training, the adapters for QLoRA), and allocates every
    /// buffer on `stream`.
    pub fn new(
        stream: &Stream,
        cfg: &DecoderConfig,
        base: &NamedTensors,
        init: &NamedTensors,
    ) -> Result<DecoderDevice, Error> {
        let ids = trainable(&cfg.model, cfg.mode);
        let rank = cfg.mode.rank();
        let lens: Vec<usize> = ids.iter().map(|p| p.len(&cfg.model, rank)).collect();
        let decay: Vec<bool> = ids.iter().map(ParamId::decay).collect();
        let opt = AdamW::new(stream, &lens, &decay)?;
        let total = opt.layout().total();
        let flat = flatten(opt.layout(), &ids, init);
        let zeros = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16 = cfg.precision == Precision::Bf16;
        let activations = match cfg.precision {
            Precision::Tf32 => {
                Activations::Tf32(Acts::new(stream, cfg)?, Scratch::new(stream, cfg)?)
            }
            Precision::Bf16 => {
                Activations::Bf16(Acts16::new(stream, cfg)?, Scratch16::new(stream, cfg)?)
            }
        };
        let bf16_grads = match (bf16, cfg.mode) {
            (true, Mode::QLora { .. }) => Some(Bf16Grads {
                per_tensor: bf16_gradient_buffers(stream, &cfg.model, cfg.mode, &ids)?,
                flat: Buffer::zeros(stream, total)?,
            }),
            _ => None,
        };
        Ok(DecoderDevice {
            cfg: *cfg,
            inputs: Inputs::new(stream, cfg)?,
            grads_per_tensor: gradient_buffers(stream, &cfg.model, cfg.mode, &ids)?,
            bf16_grads,
            weights: Weights::new(stream, &cfg.model, cfg.mode, cfg.precision, ids, base)?,
            activations,
            params: Buffer::from_host(stream, &flat)?,
            params_bf16: match bf16 {
                true => Some(Buffer::zeros(stream, total)?),
                false => None,
            },
            grads: zeros(total)?,
            m: zeros(total)?,
            v: zeros(total)?,
            step: DeviceStep::new(stream)?,
            loss: zeros(2)?,
            norm_scale: zeros(2)?,
            clip_workspace: zeros(clip::WORKSPACE_LEN as usize)?,
            opt,
            reducer: None,
        })
    }

    /// Sets the optimizer's state: `params` (and in bf16 their bf16 copy, which AdamW keeps
    /// from here on), the moments and the step count.
    pub fn set_state(
        &mut self,
        stream: &Stream,
        params: &[f32],
        m: &[f32],
        v: &[f32],
        step: u32,
    ) -> Result<(), Error> {
        self.params.copy_from_host(stream, params)?;
        if let Some(copy) = &mut self.params_bf16 {
            cast::cast(stream, &self.params, copy)?;
        }
        self.m.copy_from_host(stream, m)?;
        self.v.copy_from_host(stream, v)?;
        self.step.set_count(stream, step)
    }

    /// Puts the next step's tokens and targets in place (outside any graph).
    pub fn set_batch(
        &mut self,
        stream: &Stream,
        ids: &[u32],
        targets: &[i32],
    ) -> Result<(), Error> {
        self.inputs.ids.copy_from_host(stream, ids)?;
        Ok(self.inputs.targets.copy_from_host(stream, targets)?)
    }

    /// The gradient of the loss with respect to the embedding's output, after a step.
    pub fn embedding_grad(&self) -> &Buffer<f32> {
        match &self.activations {
            Activations::Tf32(_, s) => &s.dx_a,
            Activations::Bf16(_, s) => &s.dx_a,
        }
    }

    /// The last step's logits, `tokens × vocab`, widened to f32.
    pub fn logits(&self, stream: &Stream) -> Result<Vec<f32>, Error> {
        Ok(match &self.activations {
            Activations::Tf32(a, _) => a.logits.to_host(stream)?,
            Activations::Bf16(a, _) => a
                .logits
                .to_host(stream)?
                .iter()
                .map(|x| x.to_f32())
                .collect(),
        })
    }

    /// Queues one whole training step on `stream`.
    pub fn record_step(&mut self, stream: &Stream) -> Result<(), Error> {
        let layout = self.opt.layout().clone();
        let w = &mut self.weights;
        for (i, dst) in w.trained.iter_mut().enumerate() {
            if w.read_f32[i] {
                layout.copy_out(stream, &self.params, i, dst)?;
            }
        }
        if let Some(flat) = &self.params_bf16 {
            for (i, dst) in w.trained_bf16.iter_mut().enumerate() {
                if let Some(dst) = dst {
                    layout.copy_out(stream, flat, i, dst)?;
                }
            }
        }
        let (cfg, weights, inputs) = (&self.cfg, &self.weights, &self.inputs);
        match &mut self.activations {
            Activations::Tf32(acts, s) => {
                forward(stream, cfg, weights, inputs, acts, s, &mut self.loss)?;
                backward(
                    stream,
                    cfg,
                    weights,
                    inputs,
                    acts,
                    s,
                    &mut self.grads_per_tensor,
                )?;
            }
            Activations::Bf16(acts, s) => {
                forward16(stream, cfg, weights, inputs, acts, s, &mut self.loss)?;
                let mut no_bf16 = Vec::new();
                let mut grads = Grads {
                    f32: &mut self.grads_per_tensor,
                    bf16: match &mut self.bf16_grads {
                        Some(g) => &mut g.per_tensor,
                        None => &mut no_bf16,
                    },
                };
                backward16(stream, cfg, weights, inputs, acts, s, &mut grads)?;
            }
        }
        match &mut self.bf16_grads {
            Some(g) => {
                for (i, src) in g.per_tensor.iter().enumerate() {
                    layout.copy_in(stream, src, &mut g.flat, i)?;
                }
                cast::cast(stream, &g.flat, &mut self.grads)?;
            }
            None => {
                for (i, g) in self.grads_per_tensor.iter().enumerate() {
                    layout.copy_in(stream, g, &mut self.grads, i)?;
                }
            }
        }
        if let Some(reducer) = &mut self.reducer {
            reducer.finish(stream, &mut self.grads, &mut self.loss)?;
        }
        clip::grad_norm(
            stream,
            &self.grads,
            self.cfg.max_norm,
            &mut self.clip_workspace,
            &mut self.norm_scale,
        )?;
        let state = AdamWState {
            params: &mut self.params,
            grads: &self.grads,
            m: &mut self.m,
            v: &mut self.v,
            bf16_copy: self.params_bf16.as_mut(),
            clip: Some(&self.norm_scale),
        };
        self.opt
            .step_on_device(stream, &mut self.step, &self.cfg.adamw, state)
    }
}
