//! The decoder on the device: every buffer one training step touches, and the step itself
//! (forward, backward, clipping, AdamW) queued as launches of the `kernels` ops with no host
//! round trip, so it can be captured in a graph. The flat `params` (with `grads`, `m`, `v`)
//! in the optimizer's layout are the source of truth; the per-tensor buffers are copied out
//! of and into them each step.

use super::acts::{Acts, Inputs, Scratch};
use super::backward::backward;
use super::config::DecoderConfig;
use super::forward::forward;
use super::params::{trainable, ParamId};
use super::weights::{gradient_buffers, Weights};
use crate::model::NamedTensors;
use crate::train::grad_reduce::GradReducer;
use kernel_runtime::{Buffer, Stream};
use kernels::optim::{AdamW, AdamWState, DeviceStep, ParamLayout};
use kernels::{clip, Error};

pub(crate) struct DecoderDevice {
    cfg: DecoderConfig,
    pub inputs: Inputs,
    pub weights: Weights,
    grads_per_tensor: Vec<Buffer<f32>>,
    acts: Acts,
    scratch: Scratch,
    pub opt: AdamW,
    pub params: Buffer<f32>,
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
        Ok(DecoderDevice {
            cfg: *cfg,
            inputs: Inputs::new(stream, cfg)?,
            grads_per_tensor: gradient_buffers(stream, &cfg.model, cfg.mode, &ids)?,
            weights: Weights::new(stream, &cfg.model, cfg.mode, ids, base)?,
            acts: Acts::new(stream, cfg)?,
            scratch: Scratch::new(stream, cfg)?,
            params: Buffer::from_host(stream, &flat)?,
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

    /// Sets the optimizer's state: `params`, the moments and the step count.
    pub fn set_state(
        &mut self,
        stream: &Stream,
        params: &[f32],
        m: &[f32],
        v: &[f32],
        step: u32,
    ) -> Result<(), Error> {
        self.params.copy_from_host(stream, params)?;
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
        &self.scratch.dx_a
    }

    /// The last step's logits.
    pub fn logits(&self) -> &Buffer<f32> {
        &self.acts.logits
    }

    /// Queues one whole training step on `stream`.
    pub fn record_step(&mut self, stream: &Stream) -> Result<(), Error> {
        let layout = self.opt.layout().clone();
        for (i, w) in self.weights.trained.iter_mut().enumerate() {
            layout.copy_out(stream, &self.params, i, w)?;
        }
        forward(
            stream,
            &self.cfg,
            &self.weights,
            &self.inputs,
            &mut self.acts,
            &mut self.scratch,
            &mut self.loss,
        )?;
        backward(
            stream,
            &self.cfg,
            &self.weights,
            &self.inputs,
            &self.acts,
            &mut self.scratch,
            &mut self.grads_per_tensor,
        )?;
        for (i, g) in self.grads_per_tensor.iter().enumerate() {
            layout.copy_in(stream, g, &mut self.grads, i)?;
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
            bf16_copy: None,
            clip: Some(&self.norm_scale),
        };
        self.opt
            .step_on_device(stream, &mut self.step, &self.cfg.adamw, state)
    }
}
