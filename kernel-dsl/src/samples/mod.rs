//! Sample kernels written with the builder: they exercise the instruction families the library
//! will rely on, and they are the PTX goldens and ptxas sweep's subjects.

mod block_reduce;
mod mma_bf16;
mod saxpy;
mod transpose;
mod vector_add;
mod wgmma_bf16;

pub use block_reduce::{block_reduce_sum, BLOCK_REDUCE_THREADS};
pub use mma_bf16::mma_bf16_16x8x16;
pub use saxpy::saxpy;
pub use transpose::{transpose_32x32, TRANSPOSE_BLOCK};
pub use vector_add::vector_add;
pub use wgmma_bf16::wgmma_bf16_64x8x16;

use crate::ir::Kernel;
use crate::target::Target;

/// A sample kernel and the targets it can be emitted for.
pub struct Sample {
    pub kernel: Kernel,
    /// The lowest plain target it runs on, or the `a` target it needs.
    pub min_target: Target,
}

impl Sample {
    /// The targets of `candidates` this sample can be emitted for.
    pub fn targets_in(&self, candidates: &[Target]) -> Vec<Target> {
        candidates
            .iter()
            .copied()
            .filter(|&t| crate::emit::emit(&self.kernel, t).is_ok())
            .collect()
    }
}

/// Every sample, in a fixed order.
pub fn all() -> Vec<Sample> {
    vec![
        Sample {
            kernel: vector_add(),
            min_target: Target::Sm70,
        },
        Sample {
            kernel: saxpy(),
            min_target: Target::Sm70,
        },
        Sample {
            kernel: block_reduce_sum(),
            min_target: Target::Sm70,
        },
        Sample {
            kernel: transpose_32x32(),
            min_target: Target::Sm70,
        },
        Sample {
            kernel: mma_bf16_16x8x16(),
            min_target: Target::Sm80,
        },
        Sample {
            kernel: wgmma_bf16_64x8x16(),
            min_target: Target::Sm90a,
        },
    ]
}
