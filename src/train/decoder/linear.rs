//! One projection of a decoder layer, forward and backward: a dense GEMM against the trained
//! f32 weight (on TF32 tensor cores, as every GEMM of the decoder), or (QLoRA) the frozen NF4
//! weight plus its trained LoRA adapter; q, k and v add their bias when the model has one.
//! Every product splits k into the step's one [`GemmWorkspace`], so that a skinny one (an
//! adapter's, a weight gradient of a small model) splits inside the captured step as well.

use super::config::DecoderConfig;
use super::forward::proj;
use super::params::{Mode, ParamId};
use super::weights::Weights;
use crate::model::{LayerTensor, TensorId};
use kernel_runtime::{Buffer, Element, Stream};
use kernels::gemm::{
    gemm_with_workspace, Epilogue, GemmShape, GemmWorkspace, Layout, Math, WorkspaceSize,
};
use kernels::quant::nf4::{
    lora_backward, lora_gemm_shapes, matmul_input_grad_with_workspace, matmul_lora, workspace_size,
    Lora,
};
use kernels::{Error, Float};

/// Which projection of which layer, and how it is trained.
#[derive(Clone, Copy)]
pub(crate) struct Proj {
    pub layer: usize,
    pub t: LayerTensor,
    pub mode: Mode,
    /// `[out, in]`.
    pub out: usize,
    pub inp: usize,
}

/// An internal invariant broken: a tensor the step needs was never made.
pub(crate) fn missing(what: String) -> Error {
    Error::Unsupported {
        op: "decoder step",
        detail: format!("{what} is missing from the model's buffers; this is a bug in ptxkit's decoder, please report it"),
    }
}

pub(crate) fn bias_of(t: LayerTensor) -> Option<LayerTensor> {
    match t {
        LayerTensor::Q => Some(LayerTensor::QBias),
        LayerTensor::K => Some(LayerTensor::KBias),
        LayerTensor::V => Some(LayerTensor::VBias),
        _ => None,
    }
}

impl Proj {
    pub(crate) fn id(&self) -> TensorId {
        TensorId::Layer(self.layer, self.t)
    }

    fn bias<'w>(&self, w: &'w Weights) -> Option<&'w Buffer<f32>> {
        bias_of(self.t).and_then(|b| w.f32(TensorId::Layer(self.layer, b)))
    }

    fn adapter<'w>(&self, w: &'w Weights) -> Result<Lora<'w, f32>, Error> {
        let a = w.trained(ParamId::LoraA(self.layer, self.t));
        let b = w.trained(ParamId::LoraB(self.layer, self.t));
        let (Some(a), Some(b)) = (a, b) else {
            return Err(missing(format!("the adapter of {}", self.id().name())));
        };
        Ok(Lora {
            a,
            b,
            rank: self.mode.rank(),
            scale: self.mode.lora_scale(),
        })
    }

    /// `y = x·Wᵀ (+ bias)` for `m` rows; with QLoRA also `+ scale·(x·Aᵀ)·Bᵀ`, keeping
    /// `x·Aᵀ` in `lora_t` for the backward.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        stream: &Stream,
        w: &Weights,
        x: &Buffer<f32>,
        y: &mut Buffer<f32>,
        lora_t: Option<&mut Buffer<f32>>,
        ones: &Buffer<f32>,
        ws: &mut GemmWorkspace,
        m: usize,
    ) -> Result<(), Error> {
        let bias = self.bias(w);
        if let Some(weight) = w.f32(self.id()) {
            let mut epi = Epilogue::default();
            if let Some(b) = bias {
                epi = epi.with_bias(b);
            }
            let shape = GemmShape::new(Layout::Nt, m, self.out, self.inp);
            return gemm_with_workspace(stream, &shape, x, weight, y, &epi, Math::Tf32, ws);
        }
        let (Some(base), Some(t)) = (w.nf4(self.layer, self.t), lora_t) else {
            return Err(missing(format!("the NF4 base of {}", self.id().name())));
        };
        matmul_lora(stream, x, base, &self.adapter(w)?, t, y, m, Some(&mut *ws))?;
        if let Some(b) = bias {
            // y += 1·biasᵀ: a rank-one product adds the bias to every row (in f32: the bias
            // is added exactly, as the dense path's epilogue adds it).
            let shape = GemmShape::new(Layout::Nn, m, self.out, 1);
            gemm_with_workspace(
                stream,
                &shape,
                ones,
                b,
                y,
                &Epilogue::default().scaled(1.0, 1.0),
                Math::Fp32,
                ws,
            )?;
        }
        Ok(())
    }

    /// Given `dy` (`m × out`) and the forward's `x`, writes `dx` (`m × in`) and the gradients
    /// of whatever this projection trains into `grads` (flat-layout order).
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        stream: &Stream,
        w: &Weights,
        grads: &mut [Buffer<f32>],
        x: &Buffer<f32>,
        dy: &Buffer<f32>,
        dx: &mut Buffer<f32>,
        lora_t: Option<&Buffer<f32>>,
        u: &mut Buffer<f32>,
        ones: &Buffer<f32>,
        ws: &mut GemmWorkspace,
        m: usize,
    ) -> Result<(), Error> {
        let plain = Epilogue::default();
        if let Some(weight) = w.f32(self.id()) {
            if let Some(i) = w.position(ParamId::Model(self.id())) {
                let shape = GemmShape::new(Layout::Tn, self.out, self.inp, m);
                let dw = &mut grads[i];
                gemm_with_workspace(stream, &shape, dy, x, dw, &plain, Math::Tf32, ws)?;
            }
            if let Some(i) = bias_of(self.t)
                .and_then(|b| w.position(ParamId::Model(TensorId::Layer(self.layer, b))))
            {
                // dbias = 1ᵀ·dy: the column sums of dy, in f32, since they cancel to values
                // near AdamW's epsilon where TF32's rounding would swamp them.
                let shape = GemmShape::new(Layout::Nn, 1, self.out, m);
                let db = &mut grads[i];
                gemm_with_workspace(stream, &shape, ones, dy, db, &plain, Math::Fp32, ws)?;
            }
            let shape = GemmShape::new(Layout::Nn, m, self.inp, self.out);
            return gemm_with_workspace(stream, &shape, dy, weight, dx, &plain, Math::Tf32, ws);
        }
        let (Some(base), Some(t)) = (w.nf4(self.layer, self.t), lora_t) else {
            return Err(missing(format!("the NF4 base of {}", self.id().name())));
        };
        matmul_input_grad_with_workspace(stream, dy, base, dx, m, ws)?;
        let lora = self.adapter(w)?;
        let (da, db) = self.adapter_grads(w, grads)?;
        lora_backward(
            stream,
            dy,
            x,
            t,
            &lora,
            u,
            da,
            db,
            dx,
            m,
            self.out,
            Some(ws),
        )
    }

    /// The gradients of this projection's adapter, `dA` and `dB`, among `grads` (flat-layout
    /// order).
    pub(crate) fn adapter_grads<'g, T: Element>(
        &self,
        w: &Weights,
        grads: &'g mut [Buffer<T>],
    ) -> Result<(&'g mut Buffer<T>, &'g mut Buffer<T>), Error> {
        let (Some(ia), Some(ib)) = (
            w.position(ParamId::LoraA(self.layer, self.t)),
            w.position(ParamId::LoraB(self.layer, self.t)),
        ) else {
            return Err(missing(format!("the adapter of {}", self.id().name())));
        };
        Ok(two_mut(grads, ia, ib))
    }

    /// The products [`Self::forward`] and [`Self::backward`] (or their bf16 forms, with `dense`
    /// their dense products' math) run for `m` rows, each with its math.
    fn products(&self, m: usize, dense: Math) -> Vec<(GemmShape, Math)> {
        let (out, inp) = (self.out, self.inp);
        let fp32 = Math::Fp32;
        match self.mode.rank() {
            0 => vec![
                (GemmShape::new(Layout::Nt, m, out, inp), dense),
                (GemmShape::new(Layout::Tn, out, inp, m), dense),
                (GemmShape::new(Layout::Nn, 1, out, m), fp32),
                (GemmShape::new(Layout::Nn, m, inp, out), dense),
            ],
            // The adapter's products (`matmul_lora`, `lora_backward`) and the bias's.
            r => lora_gemm_shapes(m, out, inp, r)
                .into_iter()
                .chain([GemmShape::new(Layout::Nn, m, out, 1)])
                .map(|shape| (shape, fp32))
                .collect(),
        }
    }
}

/// The workspace every projection of the step shares (they run one after another on one
/// stream): room for the widest split any of their products plans, for the operands they
/// transpose and for the largest NF4 base weight dequantized (where its products take the
/// `wgmma` GEMM), with inputs `T` into an f32 or a `T` output, `dense` being the dense
/// products' math.
pub(crate) fn projection_workspace<T: Float>(
    stream: &Stream,
    cfg: &DecoderConfig,
    dense: Math,
) -> Result<GemmWorkspace, Error> {
    let t = cfg.tokens();
    let mut size = WorkspaceSize::default();
    for lt in LayerTensor::PROJECTIONS {
        let p = proj(cfg, 0, lt);
        for (shape, math) in p.products(t, dense) {
            size = size
                .max(WorkspaceSize::of::<T, f32>(stream, &shape, math)?)
                .max(WorkspaceSize::of::<T, T>(stream, &shape, math)?);
        }
        if p.mode.rank() > 0 {
            // The NF4 base read dequantized, where many rows on Hopper take the `wgmma` GEMM.
            size = size.max(workspace_size::<T>(stream, t, p.out, p.inp, 0)?);
        }
    }
    GemmWorkspace::with_size(stream, size)
}

/// Two distinct elements of a slice, mutably.
pub(crate) fn two_mut<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &mut T) {
    if i < j {
        let (a, b) = v.split_at_mut(j);
        (&mut a[i], &mut b[0])
    } else {
        let (a, b) = v.split_at_mut(i);
        (&mut b[0], &mut a[j])
    }
}
