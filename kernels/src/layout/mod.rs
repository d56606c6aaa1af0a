//! Data movement between the layouts attention needs, for f32 and bf16 storage: interleaved
//! `[S, H·D]` ↔ head-batched `[H, S, D]`, the 2-D transpose, and appending keys or values to a
//! paged KV cache through a block table.

mod paged;
pub mod reference;
mod swap;
mod transpose;

pub use paged::{kv_cache_append, PagedLayout};
pub use swap::{heads_from_interleaved, interleaved_from_heads};
pub use transpose::transpose;

use crate::codegen::kernel_table;
use crate::rowwise::spec::RowSpec;
use crate::{OpKernel, Storage};

kernel_table!(static SWAP = swap::swap_outer, RowSpec::ALL, [0 1 2 3 4 5 6 7]);
kernel_table!(static APPEND = paged::append, RowSpec::ALL, [0 1 2 3 4 5 6 7]);
kernel_table!(static TRANSPOSE = transpose::transpose_tiles, [Storage::F32, Storage::Bf16], [0 1]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[
    &SWAP[0],
    &SWAP[1],
    &SWAP[2],
    &SWAP[3],
    &SWAP[4],
    &SWAP[5],
    &SWAP[6],
    &SWAP[7],
    &TRANSPOSE[0],
    &TRANSPOSE[1],
    &APPEND[0],
    &APPEND[1],
    &APPEND[2],
    &APPEND[3],
    &APPEND[4],
    &APPEND[5],
    &APPEND[6],
    &APPEND[7],
];
