//! Attention: the fused flash-attention forward and backward over packed variable-length
//! batches, and decode over a paged KV cache.
//!
//! Layouts (row-major, all shared by the ops and [`reference`]):
//! - `q`: `[tokens, heads.q, heads.dim]`; `k`, `v`: `[tokens, heads.kv, heads.dim]`, where
//!   `tokens` is the sum of the batch's sequence lengths and sequence `s` holds tokens
//!   `cu_seqlens[s] .. cu_seqlens[s + 1]` (`cu_seqlens`: `seqs + 1` offsets, `u32`, on the
//!   device, so a captured graph replays with new lengths).
//! - Query head `h` reads kv head `h / (heads.q / heads.kv)` (GQA; MQA is `heads.kv = 1`).
//! - [`Mask::Causal`]: query `i` of a sequence attends keys `j ≤ i` of the same sequence.
//! - The row log-sum-exp `lse`: `[heads.q, tokens]`, f32, natural log of
//!   `Σ_j exp(scale · q·k_j)`, what the backward reads.
//! - Paged decode: caches `[num_blocks, block_size, heads.kv · heads.dim]` as
//!   [`crate::layout::PagedLayout`] describes them, the layout [`crate::layout::kv_cache_append`]
//!   writes.

// `#[device]` helpers, before the kernels that call them.
#[macro_use]
mod pair_mma;
mod backward;
mod backward_delta_kernel;
// `#[device]` tile helpers, before the kernels that call them.
#[macro_use]
mod backward_tiles;
mod backward_dkdv_kernel;
mod backward_dkdv_wgmma_kernel;
mod backward_dq_kernel;
mod backward_dq_wgmma_kernel;
mod decode;
mod decode_kernel;
mod forward;
mod forward_kernel;
mod forward_wgmma_kernel;
pub mod reference;

pub use backward::{flash_backward, flash_backward_with, flash_backward_workspace};
pub use decode::{decode_splits, paged_decode, paged_decode_workspace, Decode};
pub use forward::{flash_forward, flash_forward_with};

/// The kernels the flash-attention forward and backward run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionPath {
    /// `mma.sync`, `ldmatrix` and `cp.async` (FlashAttention-2's design): sm_80 and newer.
    MmaSync,
    /// `wgmma` on tiles the copy engine brings, a producer warpgroup and two consumers
    /// (FlashAttention-3's design): Hopper (sm_90) only. Its kernels fold the softmax scale
    /// into each exponent, so a zero or negative scale runs [`AttentionPath::MmaSync`], as
    /// does the backward with head dim 256.
    Wgmma,
}

impl AttentionPath {
    /// The path [`flash_forward`] and [`flash_backward`] take on `target`: [`AttentionPath::Wgmma`] on sm_90.
    ///
    /// ```
    /// use kernel_dsl::Target;
    /// use kernels::attention::AttentionPath;
    /// assert_eq!(AttentionPath::for_target(Target::Sm90), AttentionPath::Wgmma);
    /// assert_eq!(AttentionPath::for_target(Target::Sm89), AttentionPath::MmaSync);
    /// ```
    pub fn for_target(target: kernel_dsl::Target) -> AttentionPath {
        if target.sm() == 90 {
            AttentionPath::Wgmma
        } else {
            AttentionPath::MmaSync
        }
    }

    /// The paths that run on `target`, `mma.sync` first: both on Hopper, for comparing them.
    ///
    /// ```
    /// use kernel_dsl::Target;
    /// use kernels::attention::AttentionPath;
    /// let both = [AttentionPath::MmaSync, AttentionPath::Wgmma];
    /// assert_eq!(AttentionPath::available(Target::Sm90a), both);
    /// assert_eq!(AttentionPath::available(Target::Sm120), [AttentionPath::MmaSync]);
    /// ```
    pub fn available(target: kernel_dsl::Target) -> Vec<AttentionPath> {
        let mut paths = vec![AttentionPath::MmaSync];
        if AttentionPath::for_target(target) == AttentionPath::Wgmma {
            paths.push(AttentionPath::Wgmma);
        }
        paths
    }

    /// `Ok` where this path runs on `target`; else the error `op` returns before anything runs.
    pub(crate) fn check_runs_on(
        self,
        target: kernel_dsl::Target,
        op: &'static str,
    ) -> Result<(), crate::Error> {
        if AttentionPath::available(target).contains(&self) {
            return Ok(());
        }
        Err(crate::Error::Unsupported {
            op,
            detail: format!(
                "the wgmma path needs a Hopper (sm_90) device, but this one is {}; use AttentionPath::MmaSync or {op}",
                target.name()
            ),
        })
    }
}

/// The tensor map the Hopper kernels read a packed `[tokens, heads, dim]` tensor through: boxes
/// of 64 elements (one 128-byte swizzled row) × 1 head × `rows` tokens.
pub(crate) fn head_tiles<T: HalfElement>(
    buf: &kernel_runtime::Buffer<T>,
    tokens: usize,
    heads: usize,
    dim: usize,
    rows: u32,
) -> Result<kernel_runtime::TensorMap, crate::Error> {
    let (d, h) = (dim as u64, heads as u64);
    let tiling = kernel_runtime::TensorTiling {
        dims: vec![d, h, tokens as u64],
        strides: vec![d, h * d],
        boxes: vec![64, 1, rows],
        swizzle: kernel_runtime::TensorSwizzle::B128,
    };
    Ok(kernel_runtime::TensorMap::tiled(buf.view(), &tiling)?)
}

/// Head counts and head size of an attention op.
///
/// ```
/// let heads = kernels::attention::Heads { q: 32, kv: 8, dim: 128 };
/// assert_eq!(heads.group(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heads {
    /// Query heads.
    pub q: usize,
    /// Key/value heads; divides `q`.
    pub kv: usize,
    /// Elements per head.
    pub dim: usize,
}

impl Heads {
    /// Query heads that share one kv head (0 for no kv heads, which the ops refuse).
    ///
    /// ```
    /// use kernels::attention::Heads;
    /// assert_eq!(Heads { q: 32, kv: 8, dim: 128 }.group(), 4);
    /// assert_eq!(Heads { q: 32, kv: 0, dim: 128 }.group(), 0);
    /// ```
    pub fn group(&self) -> usize {
        self.q.checked_div(self.kv).unwrap_or(0)
    }
}

/// Which keys a query attends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every key of its sequence.
    Full,
    /// Keys at or before its own position.
    Causal,
}

/// A packed batch of variable-length sequences.
///
/// `cu_seqlens` lives on the device, so the lengths may change between graph replays; `seqs`,
/// `tokens` and `max_len` size the launch and must bound what the buffer holds: every
/// sequence is at most `max_len` tokens, and `cu_seqlens[seqs] ≤ tokens`.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// `seqs + 1` offsets into the packed tokens, starting at 0 and non-decreasing.
    pub cu_seqlens: &'a kernel_runtime::Buffer<u32>,
    /// Sequences in the batch.
    pub seqs: usize,
    /// Rows of `q`, `k` and `v`.
    pub tokens: usize,
    /// The longest sequence the launch covers.
    pub max_len: usize,
}

/// What an attention op computes: its heads, mask and softmax scale (usually
/// `1 / sqrt(heads.dim)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attention {
    pub heads: Heads,
    pub mask: Mask,
    pub scale: f32,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for kernel_runtime::Bf16 {}
    impl Sealed for kernel_runtime::F16 {}
}

/// The element types attention reads and writes: [`kernel_runtime::Bf16`] and
/// [`kernel_runtime::F16`] (the tensor cores' 16-bit inputs); products accumulate in f32.
pub trait HalfElement: crate::Float + sealed::Sealed {}
impl HalfElement for kernel_runtime::Bf16 {}
impl HalfElement for kernel_runtime::F16 {}

use crate::op_kernel::kernel_refs;
use crate::OpKernel;

static BACKWARD_DELTA: [OpKernel; 6] =
    OpKernel::instances(backward_delta_kernel::FLASH_BACKWARD_DELTA_INSTANCES);
static BACKWARD_DKDV: [OpKernel; 6] =
    OpKernel::instances(backward_dkdv_kernel::FLASH_BACKWARD_DKDV_INSTANCES);
static BACKWARD_DQ: [OpKernel; 6] =
    OpKernel::instances(backward_dq_kernel::FLASH_BACKWARD_DQ_INSTANCES);
static FORWARD: [OpKernel; 12] = OpKernel::instances(forward_kernel::FLASH_FORWARD_INSTANCES);
static FORWARD_WGMMA: [OpKernel; 12] =
    OpKernel::instances(forward_wgmma_kernel::FLASH_FORWARD_WGMMA_INSTANCES);
static BACKWARD_DKDV_WGMMA: [OpKernel; 8] =
    OpKernel::instances(backward_dkdv_wgmma_kernel::FLASH_BACKWARD_DKDV_WGMMA_INSTANCES);
static BACKWARD_DQ_WGMMA: [OpKernel; 8] =
    OpKernel::instances(backward_dq_wgmma_kernel::FLASH_BACKWARD_DQ_WGMMA_INSTANCES);
static DECODE: [OpKernel; 12] = OpKernel::instances(decode_kernel::PAGED_DECODE_INSTANCES);
static COMBINE: [OpKernel; 2] = OpKernel::instances(decode_kernel::PAGED_DECODE_COMBINE_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    FORWARD[0 1 2 3 4 5 6 7 8 9 10 11],
    FORWARD_WGMMA[0 1 2 3 4 5 6 7 8 9 10 11],
    BACKWARD_DELTA[0 1 2 3 4 5],
    BACKWARD_DKDV[0 1 2 3 4 5],
    BACKWARD_DQ[0 1 2 3 4 5],
    BACKWARD_DKDV_WGMMA[0 1 2 3 4 5 6 7],
    BACKWARD_DQ_WGMMA[0 1 2 3 4 5 6 7],
    DECODE[0 1 2 3 4 5 6 7 8 9 10 11],
    COMBINE[0 1],
];
