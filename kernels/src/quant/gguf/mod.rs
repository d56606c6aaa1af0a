//! GGUF quantized weights for inference, as ggml defines them: [Q8_0](BlockQ8_0),
//! [Q4_K](BlockQ4K) and [Q6_K](BlockQ6K), each block type documenting its byte layout.
//!
//! - A [`GgufMatrix`] holds a weight's bytes on the host: read from a file
//!   ([`GgufMatrix::from_bytes`]) or made by the reference quantizers, and decoded by CPU
//!   decoders written from the format definitions. [`GgufMatrix::to_device`] gives the
//!   [`GgufWeights`] the ops take.
//! - [`dequantize`] writes the weights as f32 or bf16, bit for bit what the CPU decoders give.
//! - [`gemv`] is the decode product `y = x·Wᵀ` for 1 to 16 rows of `x`, reading each weight
//!   byte once; [`gemv_rms_norm`] puts RMSNorm in front of it.
//! - The int8 route, the faster decode product: [`quantize_activations`] (or
//!   [`quantize_activations_rms_norm`]) writes `x` as int8 blocks of 32 into a reusable
//!   [`QuantizedActivations`], and [`gemv_q8`] multiplies them with the weights' codes by
//!   `dp4a`, exact in integers, with f32 scales per run; [`gemv_q8_mma`] takes the same
//!   activations to the integer tensor cores.
//! - [`gemv_mma`] is the decode product of a batch (1 to 16 rows of `x`) on the tensor cores,
//!   Q8_0, Q4_K and Q6_K weights decoded to bf16 in registers.
//! - [`prefill`] (any number of rows) dequantizes into a bf16 or f32 workspace and runs the
//!   library's GEMM on it.
//!
//! ```
//! use kernel_runtime::{Buffer, Device};
//! use kernels::quant::gguf::{gemv, GgufFormat, GgufMatrix};
//! # fn main() -> Result<(), kernels::Error> {
//! let stream = Device::emulator().stream()?;
//! let (n, k) = (2, 256);
//! // Each block of 32 holds 127, so its scale is 1 and Q8_0 keeps its integers exactly.
//! let w: Vec<f32> = (0..n * k)
//!     .map(|i| if i % 32 == 0 { 127.0 } else { (i % 5) as f32 - 2.0 })
//!     .collect();
//! let q = GgufMatrix::quantize(GgufFormat::Q8_0, n, k, &w)?;
//! let weights = q.to_device(&stream)?;
//! let x = Buffer::from_host(&stream, &vec![1.0f32; k])?;
//! let mut y = Buffer::<f32>::zeros(&stream, n)?;
//! gemv(&stream, &weights, &x, &mut y, 1)?;
//! let want: Vec<f32> = w.chunks(k).map(|r| r.iter().sum()).collect();
//! assert_eq!(y.to_host(&stream)?, want);
//! # Ok(()) }
//! ```

// `#[device]` decoders and dot products, before the kernels that call them.
#[macro_use]
mod decode;
#[macro_use]
mod dot;
#[macro_use]
mod dot_q8;
#[macro_use]
mod fragment;
#[macro_use]
mod fragment_int8;
mod activations;
mod dequantize_kernel;
mod format;
mod gemv_kernel;
mod gemv_mma_kernel;
mod gemv_q8_kernel;
mod gemv_q8_mma_kernel;
mod matrix;
mod ops;
mod ops_mma;
mod ops_q8;
mod q4_k;
mod q6_k;
mod q8_0;
mod quantize;
mod quantize_activations_kernel;
pub mod reference;

pub use activations::QuantizedActivations;
pub use format::GgufFormat;
pub use matrix::{GgufMatrix, GgufShape, GgufWeights};
pub use ops::{
    dequantize, dequantize_rows, gemv, gemv_rms_norm, prefill, prefill_workspace_len, GEMV_MAX_ROWS,
};
pub use ops_mma::{
    gemv_mma, gemv_mma_parts, gemv_mma_reads, gemv_mma_swiglu, gemv_mma_swiglu_reads,
    gemv_mma_with, GemvMmaPlan,
};
pub use ops_q8::{
    gemv_q8, gemv_q8_mma, gemv_q8_mma_with, quantize_activations, quantize_activations_rms_norm,
};
pub use q4_k::BlockQ4K;
pub use q6_k::BlockQ6K;
pub use q8_0::BlockQ8_0;

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

static DEQUANTIZE: [OpKernel; 6] =
    OpKernel::instances(dequantize_kernel::GGUF_DEQUANTIZE_INSTANCES);
static GEMV: [OpKernel; 36] = OpKernel::instances(gemv_kernel::GGUF_GEMV_INSTANCES);
static GEMV_MMA: [OpKernel; 17] = OpKernel::instances(gemv_mma_kernel::GGUF_GEMV_MMA_INSTANCES);
static GEMV_Q8: [OpKernel; 18] = OpKernel::instances(gemv_q8_kernel::GGUF_GEMV_Q8_INSTANCES);
static GEMV_Q8_MMA: [OpKernel; 24] =
    OpKernel::instances(gemv_q8_mma_kernel::GGUF_GEMV_Q8_MMA_INSTANCES);
static QUANTIZE_ACTIVATIONS: [OpKernel; 4] =
    OpKernel::instances(quantize_activations_kernel::GGUF_QUANTIZE_ACTIVATIONS_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    DEQUANTIZE[0 1 2 3 4 5],
    GEMV[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35],
    GEMV_MMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16],
    GEMV_Q8[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17],
    GEMV_Q8_MMA[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23],
    QUANTIZE_ACTIVATIONS[0 1 2 3],
];
