//! The decoder's weights on the device: one buffer per trained tensor (refreshed from the
//! optimizer's flat buffer each step), the frozen f32 tensors, and the frozen NF4 projections
//! of a QLoRA run.

use super::params::{Mode, ParamId};
use crate::model::{LayerTensor, ModelConfig, NamedTensors, TensorId};
use kernel_runtime::{Buffer, Stream};
use kernels::quant::nf4::Nf4Weight;
use kernels::Error;
use std::collections::HashMap;

/// Every weight the step reads.
pub(crate) struct Weights {
    /// The trained tensors, in flat-layout order.
    pub ids: Vec<ParamId>,
    index: HashMap<ParamId, usize>,
    pub trained: Vec<Buffer<f32>>,
    frozen: HashMap<TensorId, Buffer<f32>>,
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
        ids: Vec<ParamId>,
        base: &NamedTensors,
    ) -> Result<Weights, Error> {
        let rank = mode.rank();
        let trained = ids
            .iter()
            .map(|p| Buffer::zeros(stream, p.len(cfg, rank)))
            .collect::<Result<Vec<_>, _>>()?;
        let index = ids.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        let mut w = Weights {
            ids,
            index,
            trained,
            frozen: HashMap::new(),
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
