//! A projection in bf16 training: a bf16 GEMM against the weight's bf16 copy (f32 weight
//! gradients), or QLoRA's frozen NF4 weight and bf16 adapter through the NF4 tensor-core
//! kernels, whose products and adapter gradients are bf16.

use super::linear::{bias_of, missing, Proj};
use super::params::ParamId;
use super::weights::Weights;
use crate::model::TensorId;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::gemm::{gemm_with_workspace, Epilogue, GemmShape, GemmWorkspace, Layout, Math};
use kernels::quant::nf4::{lora_backward, matmul_input_grad_with_workspace, matmul_lora, Lora};
use kernels::{cast, Error};

/// Where a bf16 projection writes: an f32 buffer (the residual stream's side) or a bf16 one
/// (the next GEMM's or op's input).
pub(crate) enum Out<'a> {
    F32(&'a mut Buffer<f32>),
    Bf16(&'a mut Buffer<Bf16>),
}

/// Every gradient buffer of the step, flat-layout order: f32 for dense weights (and any
/// tensor an f32 op trains), bf16 for the adapters an NF4 step trains.
pub(crate) struct Grads<'a> {
    pub f32: &'a mut [Buffer<f32>],
    pub bf16: &'a mut [Buffer<Bf16>],
}

impl Proj {
    fn adapter16<'w>(&self, w: &'w Weights) -> Result<Lora<'w, Bf16>, Error> {
        let a = w.trained_bf16(ParamId::LoraA(self.layer, self.t));
        let b = w.trained_bf16(ParamId::LoraB(self.layer, self.t));
        let (Some(a), Some(b)) = (a, b) else {
            return Err(missing(format!("the bf16 adapter of {}", self.id().name())));
        };
        Ok(Lora {
            a,
            b,
            rank: self.mode.rank(),
            scale: self.mode.lora_scale(),
        })
    }

    fn bias16<'w>(&self, w: &'w Weights) -> Option<&'w Buffer<Bf16>> {
        bias_of(self.t).and_then(|b| w.bf16(TensorId::Layer(self.layer, b)))
    }

    /// `y = x·Wᵀ (+ bias)` for `m` bf16 rows, accumulated in f32; with QLoRA also
    /// `+ scale·(x·Aᵀ)·Bᵀ`, keeping `x·Aᵀ` in `lora_t`. `wide` (`m × out`) carries QLoRA's
    /// bf16 product to an f32 `y`. Every product splits k into `ws`.
    #[allow(clippy::too_many_arguments)]
    pub fn forward16(
        &self,
        stream: &Stream,
        w: &Weights,
        x: &Buffer<Bf16>,
        y: Out<'_>,
        lora_t: Option<&mut Buffer<Bf16>>,
        ones: &Buffer<Bf16>,
        wide: &mut Buffer<Bf16>,
        ws: &mut GemmWorkspace,
        m: usize,
    ) -> Result<(), Error> {
        let bias = self.bias16(w);
        if let Some(weight) = w.bf16(self.id()) {
            let mut epi = Epilogue::default();
            if let Some(b) = bias {
                epi = epi.with_bias(b);
            }
            let shape = GemmShape::new(Layout::Nt, m, self.out, self.inp);
            let math = Math::Fp32;
            return match y {
                Out::F32(y) => gemm_with_workspace(stream, &shape, x, weight, y, &epi, math, ws),
                Out::Bf16(y) => gemm_with_workspace(stream, &shape, x, weight, y, &epi, math, ws),
            };
        }
        let (Some(base), Some(t)) = (w.nf4(self.layer, self.t), lora_t) else {
            return Err(missing(format!("the NF4 base of {}", self.id().name())));
        };
        let (dst, wide_out) = match y {
            Out::Bf16(y) => (y, None),
            Out::F32(y) => (wide, Some(y)),
        };
        matmul_lora(
            stream,
            x,
            base,
            &self.adapter16(w)?,
            t,
            dst,
            m,
            Some(&mut *ws),
        )?;
        if let Some(b) = bias {
            // y += 1·biasᵀ, accumulated in f32 before y is rounded.
            let shape = GemmShape::new(Layout::Nn, m, self.out, 1);
            let acc = Epilogue::default().scaled(1.0, 1.0);
            gemm_with_workspace(stream, &shape, ones, b, dst, &acc, Math::Fp32, ws)?;
        }
        match wide_out {
            Some(y) => cast::cast(stream, dst, y),
            None => Ok(()),
        }
    }

    /// Given bf16 `dy` (`m × out`) and the forward's `x`, writes `dx` (`m × in`) and the
    /// gradients of whatever this projection trains: a dense weight's and bias's in f32
    /// (bf16 products summed in f32), an adapter's in bf16. Every product splits k into `ws`.
    #[allow(clippy::too_many_arguments)]
    pub fn backward16(
        &self,
        stream: &Stream,
        w: &Weights,
        grads: &mut Grads<'_>,
        x: &Buffer<Bf16>,
        dy: &Buffer<Bf16>,
        dx: Out<'_>,
        lora_t: Option<&Buffer<Bf16>>,
        u: &mut Buffer<Bf16>,
        ones: &Buffer<Bf16>,
        wide: &mut Buffer<Bf16>,
        ws: &mut GemmWorkspace,
        m: usize,
    ) -> Result<(), Error> {
        let (plain, math) = (Epilogue::default(), Math::Fp32);
        if let Some(weight) = w.bf16(self.id()) {
            if let Some(i) = w.position(ParamId::Model(self.id())) {
                let shape = GemmShape::new(Layout::Tn, self.out, self.inp, m);
                let dw = &mut grads.f32[i];
                gemm_with_workspace(stream, &shape, dy, x, dw, &plain, math, ws)?;
            }
            if let Some(i) = bias_of(self.t)
                .and_then(|b| w.position(ParamId::Model(TensorId::Layer(self.layer, b))))
            {
                // dbias = 1ᵀ·dy, the column sums of dy, accumulated in f32.
                let shape = GemmShape::new(Layout::Nn, 1, self.out, m);
                let db = &mut grads.f32[i];
                gemm_with_workspace(stream, &shape, ones, dy, db, &plain, math, ws)?;
            }
            let shape = GemmShape::new(Layout::Nn, m, self.inp, self.out);
            return match dx {
                Out::F32(dx) => {
                    gemm_with_workspace(stream, &shape, dy, weight, dx, &plain, math, ws)
                }
                Out::Bf16(dx) => {
                    gemm_with_workspace(stream, &shape, dy, weight, dx, &plain, math, ws)
                }
            };
        }
        let (Some(base), Some(t)) = (w.nf4(self.layer, self.t), lora_t) else {
            return Err(missing(format!("the NF4 base of {}", self.id().name())));
        };
        let (dst, wide_out) = match dx {
            Out::Bf16(dx) => (dx, None),
            Out::F32(dx) => (wide, Some(dx)),
        };
        matmul_input_grad_with_workspace(stream, dy, base, dst, m, ws)?;
        let lora = self.adapter16(w)?;
        let (da, db) = self.adapter_grads(w, grads.bf16)?;
        lora_backward(
            stream,
            dy,
            x,
            t,
            &lora,
            u,
            da,
            db,
            dst,
            m,
            self.out,
            Some(ws),
        )?;
        match wide_out {
            Some(dx) => cast::cast(stream, dst, dx),
            None => Ok(()),
        }
    }
}
