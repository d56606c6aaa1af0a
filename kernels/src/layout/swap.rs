//! Moving between the interleaved `[S, H·D]` layout of projections and the head-batched
//! `[H, S, D]` layout of attention: both are one kernel that swaps the two outer axes of an
//! `[A, B, D]` tensor, copying each contiguous `D`-element row whole as raw bits (16-byte
//! vectors where `D` allows).

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
use kernel_runtime::{Buffer, KernelArg, Stream};

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
    let rows = outer.checked_mul(inner).ok_or_else(|| Error::Unsupported {
        op,
        detail: format!("{outer} × {inner} rows overflow"),
    })?;
    let p = RowPlan::new(op, T::STORAGE, rows, d, None)?;
    p.check_matrix(op, "x", x.len())?;
    p.check_matrix(op, "y", y.len())?;
    if rows == 0 {
        return Ok(());
    }
    let args = [
        KernelArg::from(x),
        KernelArg::from(&mut *y),
        KernelArg::from(outer as u32),
        KernelArg::from(inner as u32),
        KernelArg::from(p.cols),
    ];
    stream.launch(super::SWAP[p.spec.index()].artifacts(), p.launch.cfg, &args)?;
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
