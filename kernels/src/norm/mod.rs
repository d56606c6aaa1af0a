//! Row norms: RMSNorm (forward, backward with a deterministic γ gradient, fused with a
//! residual add, per attention head) and LayerNorm (forward, backward), for f32 and bf16
//! storage.
//!
//! One row belongs to one warp (rows of up to 512 elements) or one CTA (wider rows); each
//! thread keeps its share of the row in registers between the reduction and the write, and
//! re-reads only the part of very wide rows that does not fit. Rows whose width is a multiple
//! of 16 bytes move in 16-byte vectors, others one element at a time.

mod backward;
mod column_sum_kernel;
// The `#[device]` helpers come first: the kernels after them call them.
mod layer;
mod layer_backward_kernel;
mod layer_kernel;
mod partials;
pub mod reference;
mod rms;
mod rms_backward_kernel;
mod rms_kernel;

pub use backward::{
    layer_norm_backward, layer_norm_backward_workspace, rms_norm_backward,
    rms_norm_backward_workspace,
};
pub use layer::layer_norm;
pub use rms::{add_rms_norm, rms_norm, rms_norm_heads};

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

static RMS_NORM: [OpKernel; 8] = OpKernel::instances(rms_kernel::RMS_NORM_INSTANCES);
static ADD_RMS_NORM: [OpKernel; 8] = OpKernel::instances(rms_kernel::ADD_RMS_NORM_INSTANCES);
static LAYER_NORM: [OpKernel; 8] = OpKernel::instances(layer_kernel::LAYER_NORM_INSTANCES);
static RMS_NORM_BACKWARD: [OpKernel; 4] =
    OpKernel::instances(rms_backward_kernel::RMS_NORM_BACKWARD_INSTANCES);
static LAYER_NORM_BACKWARD: [OpKernel; 4] =
    OpKernel::instances(layer_backward_kernel::LAYER_NORM_BACKWARD_INSTANCES);
static NORM_COLUMN_SUM: [OpKernel; 2] =
    OpKernel::instances(column_sum_kernel::NORM_COLUMN_SUM_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    RMS_NORM[0 1 2 3 4 5 6 7],
    ADD_RMS_NORM[0 1 2 3 4 5 6 7],
    LAYER_NORM[0 1 2 3 4 5 6 7],
    RMS_NORM_BACKWARD[0 1 2 3],
    LAYER_NORM_BACKWARD[0 1 2 3],
    NORM_COLUMN_SUM[0 1],
];
