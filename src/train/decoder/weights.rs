//! The decoder's weights on the device: one buffer per trained tensor (refreshed from the
//! optimizer's flat buffer each step), the frozen f32 tensors, and the frozen NF4 projections
//! of a QLoRA run; in bf16 also the bf16 copies of every tensor a GEMM reads.

use super::config::Precision;
use super::params::{Mode, ParamId};
use crate::model::{LayerTensor, ModelConfig, NamedTensors, TensorId};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::quant::nf4::Nf4Weight;
use kernels::Error;
use std::collections::HashMap;

/// Every weight the step reads.
pub(crate) struct Weights {
    /// The trained tensors, in flat-layout order.
    pub ids: Vec<ParamId>,
    index: HashMap<ParamId, usize>,
    pub trained: Vec<Buffer<f32>>,
    /// In bf16, the bf16 copy of each trained tensor a GEMM reads (refreshed from AdamW's
    /// flat bf16 copy each step).
    pub trained_bf16: Vec<Option<Buffer<Bf16>>>,
    /// Whether the step reads trained tensor `i` in f32 (and so copies it out each step).
    pub read_f32: Vec<bool>,
    frozen: HashMap<TensorId, Buffer<f32>>,
    frozen_bf16: HashMap<TensorId, Buffer<Bf16>>,
    nf4: HashMap<(usize, LayerTensor), Nf4Weight>,
}

impl Weights {
    /// Uploads `base` (every model tensor by name): trained tensors get an (empty until the
    /// first copy) buffer, frozen ones their values, and with QLoRA each projection is
    /// quantized to NF4 on the device and its f32 copy dropped.
    pub fn new(
        stream: &Stream,
        cfg: &ModelConfig,
        mode: Mode,
        precision: Precision,
        ids: Vec<ParamId>,
        base: &NamedTensors,
    ) -> Result<Weights, Error> {
        let rank = mode.rank();
        let bf16 = precision == Precision::Bf16;
        let trained = ids
            .iter()
            .map(|p| Buffer::zeros(stream, p.len(cfg, rank)))
            .collect::<Result<Vec<_>, _>>()?;
        let trained_bf16 = ids
            .iter()
            .map(|p| match bf16 && read_by_gemm(cfg, *p) {
                true => Buffer::zeros(stream, p.len(cfg, rank)).map(Some),
                false => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let read_f32 = ids.iter().map(|p| !bf16 || read_in_f32(*p)).collect();
        let index = ids.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        let mut w = Weights {
            ids,
            index,
            trained,
            trained_bf16,
            read_f32,
            frozen: HashMap::new(),
            frozen_bf16: HashMap::new(),
            nf4: HashMap::new(),
        };
        for id in TensorId::all(cfg) {
            if w.index.contains_key(&ParamId::Model(id)) {
                continue;
            }
            let host = &base[&id.name()].data;
            let dev = Buffer::from_host(stream, host)?;
            match id {
                TensorId::Layer(layer, t) if LayerTensor::PROJECTIONS.contains(&t) => {
                    let [rows, cols] = [t.shape(cfg)[0], t.shape(cfg)[1]];
                    let q = Nf4Weight::quantize(stream, &dev, rows, cols)?;
                    w.nf4.insert((layer, t), q);
                }
                _ => {
                    if bf16 && read_by_gemm(cfg, ParamId::Model(id)) {
                        let rounded: Vec<Bf16> = host.iter().map(|&x| Bf16::from_f32(x)).collect();
                        w.frozen_bf16
                            .insert(id, Buffer::from_host(stream, &rounded)?);
                    }
                    w.frozen.insert(id, dev);
                }
            }
        }
        Ok(w)
    }

    /// The position of `p` in the flat layout, if it is trained.
    pub fn position(&self, p: ParamId) -> Option<usize> {
        self.index.get(&p).copied()
    }

    /// A model tensor held in f32 (trained or frozen); `None` for an NF4 projection.
    pub fn f32(&self, id: TensorId) -> Option<&Buffer<f32>> {
        match self.position(ParamId::Model(id)) {
            Some(i) => Some(&self.trained[i]),
            None => self.frozen.get(&id),
        }
    }

    /// The bf16 copy of a model tensor a GEMM reads, in bf16 (trained or frozen).
    pub fn bf16(&self, id: TensorId) -> Option<&Buffer<Bf16>> {
        match self.position(ParamId::Model(id)) {
            Some(i) => self.trained_bf16[i].as_ref(),
            None => self.frozen_bf16.get(&id),
        }
    }

    /// A trained tensor's bf16 copy, in bf16.
    pub fn trained_bf16(&self, p: ParamId) -> Option<&Buffer<Bf16>> {
        self.position(p).and_then(|i| self.trained_bf16[i].as_ref())
    }

    /// A trained tensor's buffer.
    pub fn trained(&self, p: ParamId) -> Option<&Buffer<f32>> {
        self.position(p).map(|i| &self.trained[i])
    }

    /// The NF4 base of a projection in a QLoRA run.
    pub fn nf4(&self, layer: usize, t: LayerTensor) -> Option<&Nf4Weight> {
        self.nf4.get(&(layer, t))
    }

    /// The frozen f32 tensors, for a check that they did not change.
    pub fn frozen(&self) -> impl Iterator<Item = (&TensorId, &Buffer<f32>)> {
        self.frozen.iter()
    }
}

/// Whether a GEMM reads `p`: the projections, their biases, the LM head (the embedding when
/// tied) and the adapters.
fn read_by_gemm(cfg: &ModelConfig, p: ParamId) -> bool {
    match p {
        ParamId::Model(TensorId::Layer(_, t)) => {
            LayerTensor::PROJECTIONS.contains(&t)
                || matches!(
                    t,
                    LayerTensor::QBias | LayerTensor::KBias | LayerTensor::VBias
                )
        }
        ParamId::Model(TensorId::LmHead) => true,
        ParamId::Model(TensorId::Embed) => cfg.tied_embeddings,
        ParamId::Model(_) => false,
        ParamId::LoraA(..) | ParamId::LoraB(..) => true,
    }
}

/// Whether an f32 op reads `p` in bf16 training: the embedding's lookup and the norms, which
/// work on the f32 residual stream.
fn read_in_f32(p: ParamId) -> bool {
    matches!(
        p,
        ParamId::Model(
            TensorId::Embed
                | TensorId::FinalNorm
                | TensorId::Layer(_, LayerTensor::InputNorm | LayerTensor::PostNorm)
        )
    )
}

/// One zeroed buffer per trained tensor, for their gradients.
pub(crate) fn gradient_buffers(
    stream: &Stream,
    cfg: &ModelConfig,
    mode: Mode,
    ids: &[ParamId],
) -> Result<Vec<Buffer<f32>>, Error> {
    ids.iter()
        .map(|p| Ok(Buffer::zeros(stream, p.len(cfg, mode.rank()))?))
        .collect()
}

/// One zeroed bf16 buffer per trained tensor, for gradients an op writes in bf16 (QLoRA's
/// adapters in bf16 training).
pub(crate) fn bf16_gradient_buffers(
    stream: &Stream,
    cfg: &ModelConfig,
    mode: Mode,
    ids: &[ParamId],
) -> Result<Vec<Buffer<Bf16>>, Error> {
    ids.iter()
        .map(|p| Ok(Buffer::zeros(stream, p.len(cfg, mode.rank()))?))
        .collect()
}
