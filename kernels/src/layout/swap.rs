//! Moving between the interleaved `[S, H·D]` layout of projections and the head-batched
//! `[H, S, D]` layout of attention: both are one kernel that swaps the two outer axes of an
//! `[A, B, D]` tensor, copying each contiguous `D`-element row whole as raw bits (16-byte
//! vectors where `D` allows).

use super::swap_kernel;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::row_held_chunks;
use crate::Error;
use crate::Float;
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Checks the sizes of a swap of `outer × inner` rows of `d` and plans it; `None` when there is
/// nothing to move.
fn plan<T: Float>(
    op: &'static str,
    [x, y]: [usize; 2],
    outer: usize,
    inner: usize,
    d: usize,
) -> Result<Option<RowProblem>, Error> {
    let rows = outer.checked_mul(inner).ok_or_else(|| Error::Unsupported {
        op,
        detail: format!("{outer} × {inner} rows overflow"),
    })?;
    let p = RowProblem::holding(op, T::TYPE, rows, d, None, row_held_chunks)?;
    p.check_matrix(op, "x", x)?;
    p.check_matrix(op, "y", y)?;
    Ok((rows > 0).then_some(p))
}

/// The `#[kernel]` swap: chunks of 16 bytes where `d` allows, [`swap_kernel::HELD`] of them a
/// thread, a tile of 256 threads' a block.
#[allow(clippy::too_many_arguments)]
fn swap<T: Float>(
    op: &'static str,
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    outer: usize,
    inner: usize,
    d: usize,
) -> Result<(), Error> {
    let Some(p) = plan::<T>(op, [x.len(), y.len()], outer, inner, d)? else {
        return Ok(());
    };
    let w = p.access.width(T::TYPE);
    let chunks = p.rows * (p.cols / w);
    let per_block = swap_kernel::HELD * swap_kernel::THREADS;
    let cfg = LaunchConfig::linear(
        chunks.div_ceil(per_block).min(MAX_BLOCKS),
        swap_kernel::THREADS,
    );
    swap_kernel::swap_outer::<T>(stream, cfg, w, x, y, outer as u32, inner as u32, p.cols)?;
    Ok(())
}

/// The grid of the `#[kernel]` swap never exceeds this many blocks; each strides over the
/// tiles past it.
const MAX_BLOCKS: u32 = 1 << 20;

/// `[S, H·D]` (each token's heads side by side) to `[H, S, D]` (each head's tokens together).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // 2 tokens × 2 heads × 1: [t0h0, t0h1, t1h0, t1h1]
/// let x = Buffer::from_host(&stream, &[0.0f32, 1.0, 10.0, 11.0])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 4)?;
/// kernels::layout::heads_from_interleaved(&stream, &x, &mut y, 2, 2, 1)?;
/// assert_eq!(y.to_host(&stream)?, vec![0.0, 10.0, 1.0, 11.0]);
/// # Ok(()) }
/// ```
pub fn heads_from_interleaved<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("heads_from_interleaved")?;
    swap(
        "heads_from_interleaved",
        stream,
        x,
        y,
        tokens,
        heads,
        head_dim,
    )
}

/// `[H, S, D]` back to `[S, H·D]`: the inverse of [`heads_from_interleaved`].
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[0.0f32, 10.0, 1.0, 11.0])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 4)?;
/// kernels::layout::interleaved_from_heads(&stream, &x, &mut y, 2, 2, 1)?;
/// assert_eq!(y.to_host(&stream)?, vec![0.0, 1.0, 10.0, 11.0]);
/// # Ok(()) }
/// ```
pub fn interleaved_from_heads<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("interleaved_from_heads")?;
    swap(
        "interleaved_from_heads",
        stream,
        x,
        y,
        heads,
        tokens,
        head_dim,
    )
}
