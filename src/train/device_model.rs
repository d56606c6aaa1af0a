//! The block on the device: every buffer one training step touches, and the step itself
//! (forward, backward, clipping, AdamW) queued as launches of the `kernels` ops, with no host
//! round trip, so it can be captured in a graph.

use super::config::TrainConfig;
use super::grad_reduce::GradReducer;
use super::params::{self, Tensor};
use super::problem::Problem;
use kernel_runtime::{Buffer, Stream};
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::optim::{AdamW, AdamWState, DeviceStep};
use kernels::{clip, cross_entropy, elementwise, norm, Error};

/// Targets are never ignored; the op still wants an index to skip.
const IGNORE_INDEX: i32 = -100;

/// Every device buffer of the step. The flat `params` (with `grads`, `m`, `v`) in the
/// optimizer's layout are the source of truth; `weights` and `weight_grads` are one buffer per
/// [`Tensor`], copied out of and into them each step for the ops that take whole buffers.
pub(crate) struct DeviceModel {
    cfg: TrainConfig,
    pub x: Buffer<f32>,
    pub targets: Buffer<i32>,
    pub opt: AdamW,
    pub params: Buffer<f32>,
    pub grads: Buffer<f32>,
    pub m: Buffer<f32>,
    pub v: Buffer<f32>,
    pub step: DeviceStep,
    weights: [Buffer<f32>; 5],
    weight_grads: [Buffer<f32>; 5],
    act: Activations,
    pub loss: Buffer<f32>,
    /// `[global grad norm, clip scale]`.
    pub norm_scale: Buffer<f32>,
    /// The gradient of the loss with respect to the block's input, as a stacked block would
    /// hand it to the block below.
    pub dx: Buffer<f32>,
    clip_workspace: Buffer<f32>,
    norm_workspace: Buffer<f32>,
    /// Averages the gradient and loss over the ranks of a data-parallel run.
    pub reducer: Option<GradReducer>,
}

/// Forward activations and their gradients.
struct Activations {
    n: Buffer<f32>,
    gate: Buffer<f32>,
    up: Buffer<f32>,
    a: Buffer<f32>,
    h: Buffer<f32>,
    logits: Buffer<f32>,
    dlogits: Buffer<f32>,
    row_loss: Buffer<f32>,
    ce_workspace: Buffer<u32>,
    dh: Buffer<f32>,
    da: Buffer<f32>,
    dgate: Buffer<f32>,
    dup: Buffer<f32>,
    dn: Buffer<f32>,
    dx_norm: Buffer<f32>,
}

impl DeviceModel {
    /// Uploads the problem and allocates every buffer on `stream`.
    pub fn new(
        stream: &Stream,
        cfg: &TrainConfig,
        problem: &Problem,
    ) -> Result<DeviceModel, Error> {
        let s = cfg.shape;
        let (t, d, f, c) = (s.tokens, s.hidden, s.ffn, s.classes);
        let zeros = |n: usize| Buffer::<f32>::zeros(stream, n);
        let opt = AdamW::new(
            stream,
            &Tensor::ALL.map(|t| t.len(&s)),
            &Tensor::ALL.map(Tensor::decay),
        )?;
        let total = opt.layout().total();
        let flat = params::flatten(opt.layout(), &problem.init);
        let act = Activations {
            n: zeros(t * d)?,
            gate: zeros(t * f)?,
            up: zeros(t * f)?,
            a: zeros(t * f)?,
            h: zeros(t * d)?,
            logits: zeros(t * c)?,
            dlogits: zeros(t * c)?,
            row_loss: zeros(t)?,
            ce_workspace: Buffer::zeros(stream, cross_entropy::cross_entropy_workspace(t, c))?,
            dh: zeros(t * d)?,
            da: zeros(t * f)?,
            dgate: zeros(t * f)?,
            dup: zeros(t * f)?,
            dn: zeros(t * d)?,
            dx_norm: zeros(t * d)?,
        };
        Ok(DeviceModel {
            cfg: *cfg,
            x: Buffer::from_host(stream, &problem.x)?,
            targets: Buffer::from_host(stream, &problem.targets)?,
            params: Buffer::from_host(stream, &flat)?,
            grads: zeros(total)?,
            m: zeros(total)?,
            v: zeros(total)?,
            step: DeviceStep::new(stream)?,
            weights: per_tensor(stream, cfg)?,
            weight_grads: per_tensor(stream, cfg)?,
            act,
            loss: zeros(2)?,
            norm_scale: zeros(2)?,
            dx: zeros(t * d)?,
            clip_workspace: zeros(clip::WORKSPACE_LEN as usize)?,
            norm_workspace: zeros(norm::rms_norm_backward_workspace(t, d))?,
            opt,
            reducer: None,
        })
    }

    /// Puts the optimizer back at its start: `params` from `problem`, zero moments, step 0.
    /// Everything else is overwritten by the next step before it is read.
    pub fn reset(&mut self, stream: &Stream, problem: &Problem) -> Result<(), Error> {
        let flat = params::flatten(self.opt.layout(), &problem.init);
        self.params.copy_from_host(stream, &flat)?;
        let zero = vec![0.0f32; flat.len()];
        self.m.copy_from_host(stream, &zero)?;
        self.v.copy_from_host(stream, &zero)?;
        self.step.set_count(stream, 0)
    }

    /// Queues one whole training step on `stream`.
    pub fn record_step(&mut self, stream: &Stream) -> Result<(), Error> {
        let layout = self.opt.layout().clone();
        for (i, w) in self.weights.iter_mut().enumerate() {
            layout.copy_out(stream, &self.params, i, w)?;
        }
        self.forward(stream)?;
        self.backward(stream)?;
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

    fn forward(&mut self, stream: &Stream) -> Result<(), Error> {
        let s = self.cfg.shape;
        let (t, d, f, c) = (s.tokens, s.hidden, s.ffn, s.classes);
        let w = &self.weights;
        let act = &mut self.act;
        norm::rms_norm(
            stream,
            &self.x,
            &w[Tensor::Gamma.index()],
            &mut act.n,
            t,
            d,
            self.cfg.norm_eps,
        )?;
        linear(
            stream,
            Layout::Nt,
            (t, f, d),
            &act.n,
            &w[Tensor::WGate.index()],
            &mut act.gate,
        )?;
        linear(
            stream,
            Layout::Nt,
            (t, f, d),
            &act.n,
            &w[Tensor::WUp.index()],
            &mut act.up,
        )?;
        elementwise::swiglu(stream, &act.gate, &act.up, &mut act.a)?;
        let residual = Epilogue::default().with_residual(&self.x);
        let down = GemmShape::new(Layout::Nt, t, d, f);
        gemm(
            stream,
            &down,
            &act.a,
            &w[Tensor::WDown.index()],
            &mut act.h,
            &residual,
            Math::Fp32,
        )?;
        linear(
            stream,
            Layout::Nt,
            (t, c, d),
            &act.h,
            &w[Tensor::WOut.index()],
            &mut act.logits,
        )?;
        cross_entropy::cross_entropy(
            stream,
            &act.logits,
            &self.targets,
            &mut act.dlogits,
            &mut act.row_loss,
            &mut self.loss,
            &mut act.ce_workspace,
            t,
            c,
            IGNORE_INDEX,
        )
    }

    /// The backward; each weight's gradient goes into the flat `grads` as soon as it is
    /// complete, and to the reducer, which may start averaging it while the rest runs.
    fn backward(&mut self, stream: &Stream) -> Result<(), Error> {
        let s = self.cfg.shape;
        let (t, d, f, c) = (s.tokens, s.hidden, s.ffn, s.classes);
        let w = &self.weights;
        let act = &mut self.act;
        let [d_gamma, d_gate, d_up, d_down, d_out] = &mut self.weight_grads;
        let layout = self.opt.layout();
        let (grads, reducer) = (&mut self.grads, &mut self.reducer);
        let mut ready = |tensor: Tensor, g: &Buffer<f32>| -> Result<(), Error> {
            layout.copy_in(stream, g, grads, tensor.index())?;
            if let Some(r) = reducer {
                r.tensor_ready(stream, grads, tensor.index())?;
            }
            Ok(())
        };
        // Classifier: dW_out = dlogitsᵀ·h, dh = dlogits·W_out.
        linear(stream, Layout::Tn, (c, d, t), &act.dlogits, &act.h, d_out)?;
        ready(Tensor::WOut, d_out)?;
        linear(
            stream,
            Layout::Nn,
            (t, d, c),
            &act.dlogits,
            &w[Tensor::WOut.index()],
            &mut act.dh,
        )?;
        // Down projection: dW_down = dhᵀ·a, da = dh·W_down.
        linear(stream, Layout::Tn, (d, f, t), &act.dh, &act.a, d_down)?;
        ready(Tensor::WDown, d_down)?;
        linear(
            stream,
            Layout::Nn,
            (t, f, d),
            &act.dh,
            &w[Tensor::WDown.index()],
            &mut act.da,
        )?;
        elementwise::swiglu_backward(
            stream,
            &act.gate,
            &act.up,
            &act.da,
            &mut act.dgate,
            &mut act.dup,
        )?;
        // Gate and up projections: dW = d(gate|up)ᵀ·n, dn = dgate·W_gate + dup·W_up.
        linear(stream, Layout::Tn, (f, d, t), &act.dgate, &act.n, d_gate)?;
        ready(Tensor::WGate, d_gate)?;
        linear(stream, Layout::Tn, (f, d, t), &act.dup, &act.n, d_up)?;
        ready(Tensor::WUp, d_up)?;
        linear(
            stream,
            Layout::Nn,
            (t, d, f),
            &act.dgate,
            &w[Tensor::WGate.index()],
            &mut act.dn,
        )?;
        let accumulate = Epilogue::default().scaled(1.0, 1.0);
        gemm(
            stream,
            &GemmShape::new(Layout::Nn, t, d, f),
            &act.dup,
            &w[Tensor::WUp.index()],
            &mut act.dn,
            &accumulate,
            Math::Fp32,
        )?;
        norm::rms_norm_backward(
            stream,
            &self.x,
            &w[Tensor::Gamma.index()],
            &act.dn,
            &mut act.dx_norm,
            d_gamma,
            &mut self.norm_workspace,
            t,
            d,
            self.cfg.norm_eps,
        )?;
        ready(Tensor::Gamma, d_gamma)?;
        // The residual: the input's gradient is the block output's plus the norm path's.
        elementwise::add(stream, &act.dh, &act.dx_norm, &mut self.dx)
    }
}

/// One zeroed buffer per [`Tensor`], in [`Tensor::ALL`] order.
fn per_tensor(stream: &Stream, cfg: &TrainConfig) -> Result<[Buffer<f32>; 5], Error> {
    let [a, b, c, d, e] = Tensor::ALL.map(|w| Buffer::zeros(stream, w.len(&cfg.shape)));
    Ok([a?, b?, c?, d?, e?])
}

/// `c = op(a)·op(b)` in fp32 for `(m, n, k)`, no epilogue.
fn linear(
    stream: &Stream,
    layout: Layout,
    (m, n, k): (usize, usize, usize),
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    c: &mut Buffer<f32>,
) -> Result<(), Error> {
    let shape = GemmShape::new(layout, m, n, k);
    gemm(stream, &shape, a, b, c, &Epilogue::default(), Math::Fp32)
}
