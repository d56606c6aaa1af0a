//! The RMSNorm forward ops: plain, fused with a residual add, and per attention head.

use super::rms_kernel;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::HELD_ELEMS;
use crate::rowwise::Access;
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, Stream};

/// RMSNorm over the rows of a `rows × cols` matrix:
/// `y = x / √(mean(x²) + eps) · γ`, computed in f32, stored as `T`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[3.0f32, 4.0])?;
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::norm::rms_norm(&stream, &x, &gamma, &mut y, 1, 2, 0.0)?;
/// let y = y.to_host(&stream)?;
/// assert!((y[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6);
/// # Ok(()) }
/// ```
pub fn rms_norm<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    const OP: &str = "rms_norm";
    crate::float::f32_or_bf16::<T>(OP)?;
    let p = RowProblem::new(OP, T::TYPE, rows, cols, None, HELD_ELEMS)?;
    p.check_matrix(OP, "x", x.len())?;
    p.check_row(OP, "gamma", gamma.len())?;
    p.check_matrix(OP, "y", y.len())?;
    if rows == 0 {
        return Ok(());
    }
    // The #[kernel] form stays within 64 registers, so a block of 1024 threads holds rows of
    // up to 16384 elements in registers.
    let p = p.with_row_threads(T::TYPE, HELD_ELEMS, 1024);
    let (w, cta) = p.instance(T::TYPE);
    rms_kernel::rms_norm(
        stream,
        p.launch.cfg,
        w,
        cta,
        x,
        gamma,
        y,
        p.rows,
        p.cols,
        eps,
    )?;
    Ok(())
}

/// Residual add fused with RMSNorm: `sum = x + residual` (stored as `T`), then
/// `y = rms_norm(sum)`. The norm reads the stored (rounded) sum, so the result matches an
/// add followed by [`rms_norm`].
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let residual = Buffer::from_host(&stream, &[2.0f32, 3.0])?;
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let (mut sum, mut y) = (Buffer::<f32>::zeros(&stream, 2)?, Buffer::<f32>::zeros(&stream, 2)?);
/// kernels::norm::add_rms_norm(&stream, &x, &residual, &gamma, &mut sum, &mut y, 1, 2, 0.0)?;
/// assert_eq!(sum.to_host(&stream)?, vec![3.0, 4.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn add_rms_norm<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    residual: &Buffer<T>,
    gamma: &Buffer<T>,
    sum: &mut Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("add_rms_norm")?;
    let Some(p) = fused_problem::<T>(
        [x.len(), residual.len(), gamma.len(), sum.len(), y.len()],
        rows,
        cols,
    )?
    else {
        return Ok(());
    };
    // One element at a time the kernel takes up to 76 registers, so at most 768 threads a block.
    let most = if p.access == Access::Scalar {
        768
    } else {
        1024
    };
    let p = p.with_row_threads(T::TYPE, HELD_ELEMS, most);
    let (w, cta) = p.instance(T::TYPE);
    rms_kernel::add_rms_norm(
        stream,
        p.launch.cfg,
        w,
        cta,
        x,
        residual,
        gamma,
        sum,
        y,
        p.rows,
        p.cols,
        eps,
    )?;
    Ok(())
}

/// Per-head RMSNorm (QK-norm): `x` holds `tokens × heads` vectors of `head_dim` each
/// (`[tokens, heads·head_dim]` row-major), each normalized with the one shared `γ` of
/// `head_dim` elements.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let q = Buffer::from_host(&stream, &[1.0f32, 1.0, 2.0, 2.0])?; // 1 token, 2 heads of 2
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 4)?;
/// kernels::norm::rms_norm_heads(&stream, &q, &gamma, &mut out, 1, 2, 2, 0.0)?;
/// let out = out.to_host(&stream)?;
/// assert!(out.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_heads<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    eps: f32,
) -> Result<(), Error> {
    const OP: &str = "rms_norm_heads";
    crate::float::f32_or_bf16::<T>(OP)?;
    let vectors = tokens.checked_mul(heads).ok_or(Error::Unsupported {
        op: OP,
        detail: format!("tokens × heads = {tokens} × {heads} overflows"),
    })?;
    check_len(OP, "gamma", gamma.len(), head_dim, || {
        format!("one per element of a head, head_dim = {head_dim}")
    })?;
    rms_norm(stream, x, gamma, y, vectors, head_dim, eps)
}

/// The fused op's problem once every buffer's length checks out (`x, residual, gamma, sum,
/// y`), or `None` where there are no rows.
fn fused_problem<T: Float>(
    [x, residual, gamma, sum, y]: [usize; 5],
    rows: usize,
    cols: usize,
) -> Result<Option<RowProblem>, Error> {
    const OP: &str = "add_rms_norm";
    let p = RowProblem::new(OP, T::TYPE, rows, cols, None, HELD_ELEMS)?;
    p.check_matrix(OP, "x", x)?;
    p.check_matrix(OP, "residual", residual)?;
    p.check_row(OP, "gamma", gamma)?;
    p.check_matrix(OP, "sum", sum)?;
    p.check_matrix(OP, "y", y)?;
    Ok((rows > 0).then_some(p))
}
