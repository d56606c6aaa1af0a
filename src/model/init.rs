//! A model's starting weights, made on the host from a seed.

use super::config::ModelConfig;
use super::names::{LayerTensor, TensorId};
use super::safetensors_io::{HostTensor, NamedTensors};
use crate::selfcheck::SeededRng;

/// Standard deviation of the initial matrices, as Hugging Face's `initializer_range`.
pub const INIT_STD: f64 = 0.02;

/// Every tensor of `cfg` under its Hugging Face name: norms' γ at 1, biases at 0, matrices
/// uniform with standard deviation [`INIT_STD`] (the output projections scaled by
/// `1/√(2·layers)`, so the residual stream does not grow with depth). The same every run for a
/// seed.
///
/// ```
/// use ptxkit::model::{init_weights, ModelConfig};
/// let w = init_weights(&ModelConfig::TINY, 1);
/// assert_eq!(w["model.norm.weight"].data, vec![1.0; 128]);
/// assert_eq!(w, init_weights(&ModelConfig::TINY, 1));
/// ```
pub fn init_weights(cfg: &ModelConfig, seed: u64) -> NamedTensors {
    let mut rng = SeededRng::new(seed);
    // Uniform in [-1, 1) has standard deviation 1/√3.
    let unit = INIT_STD * 3f64.sqrt();
    let residual = unit / ((2 * cfg.layers) as f64).sqrt();
    TensorId::all(cfg)
        .into_iter()
        .map(|id| {
            let n = id.len(cfg);
            let scale = match id {
                TensorId::FinalNorm => None,
                TensorId::Layer(_, t) if t.is_norm() => None,
                TensorId::Layer(_, t) if t.is_bias() => Some(0.0),
                TensorId::Layer(_, LayerTensor::O | LayerTensor::Down) => Some(residual),
                _ => Some(unit),
            };
            let data = match scale {
                None => vec![1.0; n],
                Some(s) => (0..n).map(|_| (rng.next_f32() as f64 * s) as f32).collect(),
            };
            (id.name(), HostTensor::new(id.shape(cfg), data))
        })
        .collect()
}
