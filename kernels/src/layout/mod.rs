//! Data movement between the layouts attention needs, for f32 and bf16 storage (the paged
//! cache append for f16 too): interleaved
//! `[S, H·D]` ↔ head-batched `[H, S, D]`, the 2-D transpose, and appending keys or values to a
//! paged KV cache through a block table.

mod paged;
mod paged_kernel;
pub mod reference;
mod swap;
mod swap_kernel;
mod transpose;
mod transpose_kernel;

pub use paged::{kv_cache_append, PagedLayout};
pub use swap::{heads_from_interleaved, interleaved_from_heads};
pub use transpose::transpose;
pub(crate) use transpose::transpose_prefix;

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

static SWAP: [OpKernel; 4] = OpKernel::instances(swap_kernel::SWAP_OUTER_INSTANCES);
static TRANSPOSE: [OpKernel; 3] = OpKernel::instances(transpose_kernel::TRANSPOSE_INSTANCES);
static APPEND: [OpKernel; 12] = OpKernel::instances(paged_kernel::KV_CACHE_APPEND_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    SWAP[0 1 2 3],
    TRANSPOSE[0 1 2],
    APPEND[0 1 2 3 4 5 6 7 8 9 10 11],
];
