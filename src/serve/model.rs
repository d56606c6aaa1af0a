//! A `llama` GGUF model on the device: the quantized matrices as [`GgufWeights`], norms and
//! biases as f32 buffers, and the token embedding dequantized to f32 for the gather.

use super::error::ServeError;
use crate::gguf::llama::{self, LlamaError, Weight};
use crate::gguf::{Gguf, TensorType};
use crate::model::ModelConfig;
use kernel_runtime::{Buffer, Stream};
use kernels::quant::gguf::{GgufMatrix, GgufWeights};

/// One decoder block's weights.
pub(crate) struct Layer {
    pub attn_norm: Buffer<f32>,
    pub q: GgufWeights,
    pub k: GgufWeights,
    pub v: GgufWeights,
    pub o: GgufWeights,
    /// The q, k and v biases of a Qwen2-style model.
    pub bias: Option<[Buffer<f32>; 3]>,
    pub ffn_norm: Buffer<f32>,
    pub gate: GgufWeights,
    pub up: GgufWeights,
    pub down: GgufWeights,
}

/// A model loaded for serving.
pub struct ServeModel {
    config: ModelConfig,
    pub(crate) embed: Buffer<f32>,
    pub(crate) layers: Vec<Layer>,
    pub(crate) output_norm: Buffer<f32>,
    pub(crate) output: GgufWeights,
}

impl ServeModel {
    /// Loads `file` onto `stream`'s device: checks it is a `llama` model with the byte-level
    /// vocabulary, that every tensor is present with its shape, and that each matrix is in a
    /// type the decode kernels read (Q8_0, Q4_K or Q6_K).
    ///
    /// ```
    /// # fn main() -> Result<(), ptxkit::serve::ServeError> {
    /// let file = ptxkit::serve::tiny_model_file()?;
    /// let stream = ptxkit::runtime::Device::emulator().stream()?;
    /// let model = ptxkit::serve::ServeModel::load(&stream, &file)?;
    /// assert_eq!(model.config(), &ptxkit::model::ModelConfig::TINY);
    /// # Ok(()) }
    /// ```
    pub fn load(stream: &Stream, file: &Gguf) -> Result<ServeModel, ServeError> {
        let config = llama::read_config(file)?;
        let matrix = |w: Weight| load_matrix(stream, file, &config, w);
        let vector = |w: Weight| load_vector(stream, file, &config, w);
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let bias = if config.qkv_bias {
                Some([
                    vector(Weight::AttnQBias(i))?,
                    vector(Weight::AttnKBias(i))?,
                    vector(Weight::AttnVBias(i))?,
                ])
            } else {
                None
            };
            layers.push(Layer {
                attn_norm: vector(Weight::AttnNorm(i))?,
                q: matrix(Weight::AttnQ(i))?,
                k: matrix(Weight::AttnK(i))?,
                v: matrix(Weight::AttnV(i))?,
                o: matrix(Weight::AttnOutput(i))?,
                bias,
                ffn_norm: vector(Weight::FfnNorm(i))?,
                gate: matrix(Weight::FfnGate(i))?,
                up: matrix(Weight::FfnUp(i))?,
                down: matrix(Weight::FfnDown(i))?,
            });
        }
        let head = if config.tied_embeddings {
            Weight::TokenEmbd
        } else {
            Weight::Output
        };
        let embed = dequantized(file, &config, Weight::TokenEmbd)?;
        Ok(ServeModel {
            embed: Buffer::from_host(stream, &embed)?,
            layers,
            output_norm: vector(Weight::OutputNorm)?,
            output: matrix(head)?,
            config,
        })
    }

    /// The model's sizes, from the file's metadata.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }
}

/// The tensor's info, checked to have the shape `cfg` implies (ggml order).
fn checked<'a>(
    file: &'a Gguf,
    cfg: &ModelConfig,
    w: Weight,
) -> Result<&'a crate::gguf::TensorInfo, ServeError> {
    let t = file.tensor(&w.gguf_name())?;
    let expected: Vec<u64> = w.shape(cfg).iter().rev().map(|&d| d as u64).collect();
    if t.shape != expected {
        return Err(LlamaError::Shape {
            name: t.name.clone(),
            expected: expected.iter().map(|&d| d as usize).collect(),
            found: t.shape.iter().map(|&d| d as usize).collect(),
        }
        .into());
    }
    Ok(t)
}

fn load_matrix(
    stream: &Stream,
    file: &Gguf,
    cfg: &ModelConfig,
    w: Weight,
) -> Result<GgufWeights, ServeError> {
    let t = checked(file, cfg, w)?;
    let format =
        t.ty.quant_format()
            .ok_or_else(|| LlamaError::UnsupportedType {
                name: t.name.clone(),
                ty: t.ty.name(),
            })?;
    let (rows, cols) = t.matrix().expect("checked to be a matrix");
    let data = file.tensor_data(&t.name)?.to_vec();
    Ok(GgufMatrix::from_bytes(format, rows, cols, data)?.to_device(stream)?)
}

/// A tensor's values as f32, row-major: F32 as stored, quantized types decoded.
pub(crate) fn dequantized(
    file: &Gguf,
    cfg: &ModelConfig,
    w: Weight,
) -> Result<Vec<f32>, ServeError> {
    let t = checked(file, cfg, w)?;
    let data = file.tensor_data(&t.name)?;
    if t.ty == TensorType::F32 {
        return Ok(data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect());
    }
    let format =
        t.ty.quant_format()
            .ok_or_else(|| LlamaError::UnsupportedType {
                name: t.name.clone(),
                ty: t.ty.name(),
            })?;
    let (rows, cols) = t.matrix().ok_or_else(|| LlamaError::UnsupportedType {
        name: t.name.clone(),
        ty: t.ty.name(),
    })?;
    Ok(GgufMatrix::from_bytes(format, rows, cols, data.to_vec())?.dequantize())
}

fn load_vector(
    stream: &Stream,
    file: &Gguf,
    cfg: &ModelConfig,
    w: Weight,
) -> Result<Buffer<f32>, ServeError> {
    let t = checked(file, cfg, w)?;
    if t.ty != TensorType::F32 {
        return Err(LlamaError::UnsupportedType {
            name: t.name.clone(),
            ty: t.ty.name(),
        }
        .into());
    }
    Ok(Buffer::from_host(stream, &dequantized(file, cfg, w)?)?)
}
