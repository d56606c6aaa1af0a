//! Softmax over the rows of a matrix, forward and backward, with an optional scale and causal
//! mask, for f32 and bf16 storage.
//!
//! A row belongs to one warp (up to 512 elements) or one CTA (wider rows, any length). Each
//! thread holds its share of the row in registers between the reductions and the write; rows
//! too wide for that (over 8192 elements; 16384 for bf16 rows whose width is a multiple of 8)
//! go to a streaming forward kernel that reads them again. Rows whose width is a multiple of 16 bytes move in 16-byte vectors,
//! others one element at a time.

mod backward;
mod backward_kernel;
mod forward;
mod forward_kernel;
mod forward_params;
mod mask;
mod ops;
pub mod reference;
mod scores;
mod streaming_kernel;

pub use mask::Mask;
pub use ops::{softmax, softmax_backward};
#[doc(hidden)]
pub use ops::{softmax_backward_builder, softmax_builder};

use crate::codegen::{kernel_refs, kernel_table};
use crate::rowwise::spec::RowSpec;
use crate::OpKernel;

kernel_table!(static FORWARD = forward_kernel::softmax_forward, RowSpec::ALL, [0 1 2 3 4 5 6 7]);
// Only CTA-per-row launches can have rows wider than their registers.
kernel_table!(static STREAMING = streaming_kernel::softmax_forward_streaming, RowSpec::CTA, [0 1 2 3]);
kernel_table!(static BACKWARD = backward_kernel::softmax_backward, RowSpec::ALL, [0 1 2 3 4 5 6 7]);

static SOFTMAX: [OpKernel; 8] = OpKernel::instances(forward::SOFTMAX_INSTANCES);
static SOFTMAX_STREAMING: [OpKernel; 4] = OpKernel::instances(forward::SOFTMAX_STREAMING_INSTANCES);
static SOFTMAX_BACKWARD: [OpKernel; 8] = OpKernel::instances(backward::SOFTMAX_BACKWARD_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    SOFTMAX[0 1 2 3 4 5 6 7],
    SOFTMAX_STREAMING[0 1 2 3],
    SOFTMAX_BACKWARD[0 1 2 3 4 5 6 7],
    FORWARD[0 1 2 3 4 5 6 7],
    STREAMING[0 1 2 3],
    BACKWARD[0 1 2 3 4 5 6 7],
];
