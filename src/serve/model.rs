//! A `llama` GGUF model on the device: the quantized matrices as [`GgufWeights`], norms and
//! biases as f32 buffers, and the token embedding dequantized to f32 for the gather.

use super::error::ServeError;
use crate::gguf::llama::{self, LlamaError, Weight};
use crate::gguf::{Gguf, TensorType};
use crate::model::ModelConfig;
use kernel_runtime::{Buffer, Stream};
use kernels::quant::gguf::{gemv_mma_reads, gemv_mma_swiglu_reads, GgufMatrix, GgufWeights};
use std::ops::Range;

/// One decoder block's weights.
pub(crate) struct Layer {
    pub attn_norm: Buffer<f32>,
    /// q, k and v, in that order.
    pub qkv: Projections,
    pub o: GgufWeights,
    /// The q, k and v biases of a Qwen2-style model.
    pub bias: Option<[Buffer<f32>; 3]>,
    pub ffn_norm: Buffer<f32>,
    /// The MLP's gate and up, in that order.
    pub gate_up: Projections,
    pub down: GgufWeights,
}

/// Projections that read the same input (q, k and v; the gate and the up): one stacked
/// weight where a decode step reads them all in one launch, else a weight each.
pub(crate) enum Projections {
    /// The parts' rows one after another, `parts[i]` rows of the i-th.
    Stacked {
        w: GgufWeights,
        parts: Vec<usize>,
    },
    Apart(Vec<GgufWeights>),
}

impl Projections {
    /// The weights a decode step reads (to decide which norm they take).
    pub fn weights(&self) -> Vec<&GgufWeights> {
        match self {
            Projections::Stacked { w, .. } => vec![w],
            Projections::Apart(ws) => ws.iter().collect(),
        }
    }

    /// The weight holding part `i`, and that part's rows in it.
    pub fn part(&self, i: usize) -> (&GgufWeights, Range<usize>) {
        match self {
            Projections::Stacked { w, parts } => {
                let first: usize = parts[..i].iter().sum();
                (w, first..first + parts[i])
            }
            Projections::Apart(ws) => (&ws[i], 0..ws[i].rows()),
        }
    }
}

/// Whether a decode step of a model loaded by [`ServeModel::load_with`] fuses launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fusion {
    /// q, k and v stacked into one weight where they share a format and the tensor-core
    /// GEMV reads them (one launch instead of three); the gate and the up stacked where the
    /// GEMV's SwiGLU form reads them (one launch instead of three, the SwiGLU included); the
    /// o projection reading attention's bf16 output (no cast in front). Four to five
    /// launches a layer fewer. [`ServeModel::load`] takes this.
    Fused,
    /// Every projection its own weight and launch, and the cast in front of the o
    /// projection: the form before fusing, kept to measure against.
    Unfused,
}

/// A model loaded for serving.
pub struct ServeModel {
    config: ModelConfig,
    pub(crate) embed: Buffer<f32>,
    pub(crate) layers: Vec<Layer>,
    pub(crate) output_norm: Buffer<f32>,
    pub(crate) output: GgufWeights,
    fusion: Fusion,
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
        ServeModel::load_with(stream, file, Fusion::Fused)
    }

    /// [`load`](Self::load), with a decode step's launches fused or not (`Fusion::Unfused`
    /// is there to measure the fused form against). Both give the same tokens.
    ///
    /// ```
    /// # fn main() -> Result<(), ptxkit::serve::ServeError> {
    /// use ptxkit::serve::{Fusion, ServeModel};
    /// let file = ptxkit::serve::tiny_model_file()?;
    /// let stream = ptxkit::runtime::Device::emulator().stream()?;
    /// let model = ServeModel::load_with(&stream, &file, Fusion::Unfused)?;
    /// assert_eq!(model.fusion(), Fusion::Unfused);
    /// # Ok(()) }
    /// ```
    pub fn load_with(
        stream: &Stream,
        file: &Gguf,
        fusion: Fusion,
    ) -> Result<ServeModel, ServeError> {
        let config = llama::read_config(file)?;
        let host = |w: Weight| read_matrix(file, &config, w);
        let matrix = |w: Weight| Ok::<_, ServeError>(host(w)?.to_device(stream)?);
        let stacked = |ws: &[Weight], reads: &dyn Fn(&GgufMatrix) -> bool| {
            let mats = ws.iter().map(|&w| host(w)).collect::<Result<Vec<_>, _>>()?;
            projections(stream, mats, fusion, reads)
        };
        let qkv_reads = |w: &GgufMatrix| gemv_mma_reads(stream, w);
        let swiglu_reads = |w: &GgufMatrix| gemv_mma_swiglu_reads::<f32>(stream, w);
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
                qkv: stacked(
                    &[Weight::AttnQ(i), Weight::AttnK(i), Weight::AttnV(i)],
                    &qkv_reads,
                )?,
                o: matrix(Weight::AttnOutput(i))?,
                bias,
                ffn_norm: vector(Weight::FfnNorm(i))?,
                gate_up: stacked(&[Weight::FfnGate(i), Weight::FfnUp(i)], &swiglu_reads)?,
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
            fusion,
        })
    }

    /// Whether a decode step fuses launches where it can.
    pub fn fusion(&self) -> Fusion {
        self.fusion
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

/// `mats` as [`Projections`]: stacked if `fusion` asks, they share a format and the GEMV
/// that would read the stack (`reads`) does, else apart.
fn projections(
    stream: &Stream,
    mats: Vec<GgufMatrix>,
    fusion: Fusion,
    reads: &dyn Fn(&GgufMatrix) -> bool,
) -> Result<Projections, ServeError> {
    let same = mats.iter().all(|m| m.format() == mats[0].format());
    if fusion == Fusion::Fused && same {
        let stack = GgufMatrix::stack(&mats.iter().collect::<Vec<_>>())?;
        if reads(&stack) {
            let parts = mats.iter().map(GgufMatrix::rows).collect();
            let w = stack.to_device(stream)?;
            return Ok(Projections::Stacked { w, parts });
        }
    }
    let apart = mats.iter().map(|m| m.to_device(stream));
    Ok(Projections::Apart(apart.collect::<Result<_, _>>()?))
}

fn read_matrix(file: &Gguf, cfg: &ModelConfig, w: Weight) -> Result<GgufMatrix, ServeError> {
    let t = checked(file, cfg, w)?;
    let format =
        t.ty.quant_format()
            .ok_or_else(|| LlamaError::UnsupportedType {
                name: t.name.clone(),
                ty: t.ty.name(),
            })?;
    let (rows, cols) = t.matrix().expect("checked to be a matrix");
    let data = file.tensor_data(&t.name)?.to_vec();
    Ok(GgufMatrix::from_bytes(format, rows, cols, data)?)
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
