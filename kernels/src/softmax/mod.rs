//! Softmax over the rows of a matrix, forward and backward, with an optional scale and causal
//! mask, for f32 and bf16 storage, written in `#[kernel]`.
//!
//! A row belongs to one warp or one block. Each thread holds its share of the row in registers
//! between the reductions and the write (16 elements, 32 for block-owned bf16 rows in 16-byte
//! chunks); rows too wide for that go to a streaming forward kernel that reads the rest again.
//! Rows whose width is a multiple of 16 bytes move in 16-byte vectors, others one element at a
//! time.

mod backward;
mod forward;
mod mask;
mod ops;
pub mod reference;

pub use mask::Mask;
pub use ops::{softmax, softmax_backward};

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

static SOFTMAX: [OpKernel; 8] = OpKernel::instances(forward::SOFTMAX_INSTANCES);
static SOFTMAX_STREAMING: [OpKernel; 4] = OpKernel::instances(forward::SOFTMAX_STREAMING_INSTANCES);
static SOFTMAX_BACKWARD: [OpKernel; 8] = OpKernel::instances(backward::SOFTMAX_BACKWARD_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    SOFTMAX[0 1 2 3 4 5 6 7],
    SOFTMAX_STREAMING[0 1 2 3],
    SOFTMAX_BACKWARD[0 1 2 3 4 5 6 7],
];
