//! Moving between the interleaved `[S, H·D]` layout of projections and the head-batched
//! `[H, S, D]` layout of attention: both are one kernel that swaps the two outer axes of an
//! `[A, B, D]` tensor, copying each contiguous `D`-element row whole as raw bits (16-byte
//! vectors where `D` allows).

use super::swap_kernel;
use crate::cast::Element;
use crate::codegen::rows::{for_each_row, Row};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunks, element};
use crate::rowwise::moves::{load_bits, store_bits};
use crate::rowwise::shape::RowPlan;
use crate::rowwise::spec::RowSpec;
use crate::Error;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::Kernel;
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};

/// Parameters: `x, y, outer, inner, d`: `y[b][a][:] = x[a][b][:]` for `a < outer`, `b < inner`.
pub(crate) fn swap_outer(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let mut b = KernelBuilder::new(format!("swap_outer_{}", spec.suffix()));
    let x = tensor_param(&mut b, "x", storage, false);
    let y = tensor_param(&mut b, "y", storage, true);
    let outer = b.param::<U32>("outer");
    let inner = b.param::<U32>("inner");
    let d = b.param::<U32>("d");
    let width = spec.access.width(storage);
    let nchunks = chunks(&mut b, d, width);
    let rows = b.mul(outer, inner);
    for_each_row(&mut b, spec.group, rows, |b, row: Row| {
        let a = b.div(row.row, inner);
        let i = b.rem(row.row, inner);
        let out_row = b.mad(i, outer, a);
        let src = b.mul(row.row, d);
        let dst = b.mul(out_row, d);
        b.for_range(row.lane, nchunks, row.width, |b, c| {
            let s = element(b, src, c, width);
            let o = element(b, dst, c, width);
            let v = load_bits(b, &x, s, spec.access);
            store_bits(b, &y, o, v);
        });
    });
    b.finish()
}

/// Checks the sizes of a swap of `outer × inner` rows of `d` and plans it; `None` when there is
/// nothing to move.
fn plan<T: Element>(
    op: &'static str,
    [x, y]: [usize; 2],
    outer: usize,
    inner: usize,
    d: usize,
) -> Result<Option<RowPlan>, Error> {
    let rows = outer.checked_mul(inner).ok_or_else(|| Error::Unsupported {
        op,
        detail: format!("{outer} × {inner} rows overflow"),
    })?;
    let p = RowPlan::new(op, T::STORAGE, rows, d, None)?;
    p.check_matrix(op, "x", x)?;
    p.check_matrix(op, "y", y)?;
    Ok((rows > 0).then_some(p))
}

/// The `#[kernel]` swap: chunks of 16 bytes where `d` allows, [`swap_kernel::HELD`] of them a
/// thread, a tile of 256 threads' a block.
#[allow(clippy::too_many_arguments)]
fn swap<T: Element>(
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
    let w = p.spec.access.width(T::STORAGE);
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

#[allow(clippy::too_many_arguments)]
fn swap_builder<T: Element>(
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
    let args = [
        KernelArg::from(x),
        KernelArg::from(&mut *y),
        KernelArg::from(outer as u32),
        KernelArg::from(inner as u32),
        KernelArg::from(p.cols),
    ];
    stream.launch(
        super::SWAP_BUILDER[p.spec.index()].artifacts(),
        p.launch.cfg,
        &args,
    )?;
    Ok(())
}

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
pub fn heads_from_interleaved<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
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
pub fn interleaved_from_heads<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
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

/// The builder-written kernel that [`heads_from_interleaved`] replaces, kept only until the two
/// have been measured side by side (`bench_layout`).
#[doc(hidden)]
pub fn heads_from_interleaved_builder<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
    let op = "heads_from_interleaved";
    swap_builder(op, stream, x, y, tokens, heads, head_dim)
}

/// The builder-written kernel that [`interleaved_from_heads`] replaces, kept only until the two
/// have been measured side by side (`bench_layout`).
#[doc(hidden)]
pub fn interleaved_from_heads_builder<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
) -> Result<(), Error> {
    let op = "interleaved_from_heads";
    swap_builder(op, stream, x, y, heads, tokens, head_dim)
}
