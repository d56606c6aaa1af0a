//! NF4 (4-bit NormalFloat) weights, bitsandbytes-compatible, for QLoRA: the format
//! ([`Nf4Weight`], whose rustdoc states the byte layout), quantization and dequantization on
//! the device, and the products through a frozen weight with the dequantization fused:
//! [`matmul`] (`y = x·Wᵀ`), [`matmul_input_grad`] (`dx = dy·W`), and the LoRA-adapted
//! forward and adapter gradients ([`matmul_lora`], [`lora_backward`]), and the fused gate and
//! up projections ([`matmul_gate_up`]).
//!
//! [`reference`] is the CPU quantizer and decoder written from the format's definition, with
//! the f64 products the tests compare with.

mod code;
// `#[device]` helpers, before the kernels that call them.
#[macro_use]
mod device;
mod dequantize_kernel;
mod gate_up_kernel;
mod gemv_kernel;
mod input_grad_kernel;
mod mma_kernel;
mod ops;
mod quantize_kernel;
pub mod reference;
mod weight;

pub use code::{dynamic_code, nearest_code, nf4_code_of, NF4_CODE, NF4_THRESHOLDS};
pub use ops::{
    dequantized_weight_elems, fused_tensor_core_product, lora_backward, lora_gemm_shapes, matmul,
    matmul_gate_up, matmul_input_grad, matmul_input_grad_with_workspace, matmul_lora,
    matmul_with_workspace, workspace_size, Lora, DEQUANTIZED_MIN_ROWS,
};
pub use weight::Nf4Weight;

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

/// Weights per absmax block.
pub const BLOCK: usize = 64;
/// Absmax values per double-quantization group.
pub const DOUBLE_BLOCK: usize = 256;

static QUANTIZE: [OpKernel; 2] = OpKernel::instances(quantize_kernel::NF4_QUANTIZE_INSTANCES);
static DEQUANTIZE: [OpKernel; 2] = OpKernel::instances(dequantize_kernel::NF4_DEQUANTIZE_INSTANCES);
static GEMV: [OpKernel; 6] = OpKernel::instances(gemv_kernel::NF4_GEMV_INSTANCES);
static INPUT_GRAD: [OpKernel; 2] = OpKernel::instances(input_grad_kernel::NF4_INPUT_GRAD_INSTANCES);
static GATE_UP: [OpKernel; 4] = OpKernel::instances(gate_up_kernel::NF4_GATE_UP_INSTANCES);
static MMA: [OpKernel; 4] = OpKernel::instances(mma_kernel::NF4_MMA_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    QUANTIZE[0 1],
    DEQUANTIZE[0 1],
    GEMV[0 1 2 3 4 5],
    INPUT_GRAD[0 1],
    GATE_UP[0 1 2 3],
    MMA[0 1 2 3],
];
