//! The backward ops of RMSNorm and LayerNorm. Each launches the row kernel (dx, plus per-CTA
//! partial γ/β gradients in the caller's f32 workspace) and then the column sums that reduce
//! the partials in a fixed order, so the gradients are bit-identical run to run. Nothing
//! touches the host in between: the pair can be captured in a graph.

use super::partials::{MAX_PARTS, SUM_COLS, SUM_THREADS};
use super::{column_sum_kernel, layer_backward_kernel, rms_backward_kernel};
use crate::error::check_workspace;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::BACKWARD_HELD_ELEMS;
use crate::Error;
use crate::Float;
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Workspace elements [`rms_norm_backward`] needs for a `rows × cols` problem (saturating at
/// `usize::MAX`, which no buffer holds, so the op refuses such sizes with an error).
///
/// ```
/// assert_eq!(kernels::norm::rms_norm_backward_workspace(3, 10), 30);
/// assert_eq!(kernels::norm::rms_norm_backward_workspace(1 << 20, 10), 512 * 10);
/// ```
pub fn rms_norm_backward_workspace(rows: usize, cols: usize) -> usize {
    parts(rows).saturating_mul(cols)
}

/// Workspace elements [`layer_norm_backward`] needs for a `rows × cols` problem (saturating,
/// as [`rms_norm_backward_workspace`] does).
///
/// ```
/// assert_eq!(kernels::norm::layer_norm_backward_workspace(3, 10), 60);
/// ```
pub fn layer_norm_backward_workspace(rows: usize, cols: usize) -> usize {
    parts(rows).saturating_mul(cols).saturating_mul(2)
}

fn parts(rows: usize) -> usize {
    rows.clamp(1, MAX_PARTS as usize)
}

/// RMSNorm backward: writes `dx` and `dγ` for upstream gradient `dy`, recomputing the row
/// statistics from `x`. `workspace` holds at least [`rms_norm_backward_workspace`] f32s; its
/// contents on return are unspecified.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::norm;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let (rows, cols) = (2, 3);
/// let x = Buffer::from_host(&stream, &[1.0f32, -2.0, 3.0, 0.5, 0.25, -1.0])?;
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 0.5, 2.0])?;
/// let dy = Buffer::from_host(&stream, &[0.1f32, 0.2, -0.3, 1.0, -1.0, 0.5])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, rows * cols)?;
/// let mut dgamma = Buffer::<f32>::zeros(&stream, cols)?;
/// let mut ws = Buffer::<f32>::zeros(&stream, norm::rms_norm_backward_workspace(rows, cols))?;
/// norm::rms_norm_backward(&stream, &x, &gamma, &dy, &mut dx, &mut dgamma, &mut ws, rows, cols, 1e-6)?;
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_backward<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    dy: &Buffer<T>,
    dx: &mut Buffer<T>,
    dgamma: &mut Buffer<T>,
    workspace: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("rms_norm_backward")?;
    let lens = [x.len(), gamma.len(), dy.len(), dx.len(), dgamma.len()];
    let (p, used) = rms_problem::<T>(lens, workspace.len(), rows, cols)?;
    if rows > 0 {
        let (w, _) = p.instance(T::TYPE);
        rms_backward_kernel::rms_norm_backward(
            stream,
            p.launch.cfg,
            w,
            x,
            gamma,
            dy,
            dx,
            workspace,
            p.rows,
            p.cols,
            eps,
        )?;
    }
    sum_columns(stream, workspace, 0, dgamma, used, p.cols)
}

/// LayerNorm backward: writes `dx`, `dγ` and `dβ`. `workspace` holds at least
/// [`layer_norm_backward_workspace`] f32s; its contents on return are unspecified.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::norm;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 3.0])?;
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let dy = Buffer::from_host(&stream, &[1.0f32, 0.0])?;
/// let (mut dx, mut dg, mut db) = (
///     Buffer::<f32>::zeros(&stream, 2)?, Buffer::<f32>::zeros(&stream, 2)?, Buffer::<f32>::zeros(&stream, 2)?);
/// let mut ws = Buffer::<f32>::zeros(&stream, norm::layer_norm_backward_workspace(1, 2))?;
/// norm::layer_norm_backward(&stream, &x, &gamma, &dy, &mut dx, &mut dg, &mut db, &mut ws, 1, 2, 0.0)?;
/// assert_eq!(db.to_host(&stream)?, vec![1.0, 0.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    dy: &Buffer<T>,
    dx: &mut Buffer<T>,
    dgamma: &mut Buffer<T>,
    dbeta: &mut Buffer<T>,
    workspace: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("layer_norm_backward")?;
    let lens = [
        x.len(),
        gamma.len(),
        dy.len(),
        dx.len(),
        dgamma.len(),
        dbeta.len(),
    ];
    let (p, used) = layer_problem::<T>(lens, workspace.len(), rows, cols)?;
    if rows > 0 {
        let (w, _) = p.instance(T::TYPE);
        layer_backward_kernel::layer_norm_backward(
            stream,
            p.launch.cfg,
            w,
            x,
            gamma,
            dy,
            dx,
            workspace,
            p.rows,
            p.cols,
            eps,
        )?;
    }
    sum_columns(stream, workspace, 0, dgamma, used, p.cols)?;
    sum_columns(stream, workspace, used * p.cols, dbeta, used, p.cols)
}

/// The RMSNorm problem once every buffer's length checks out (`x, gamma, dy, dx, dgamma` and
/// the workspace), with the workspace rows its launch fills (none without rows).
fn rms_problem<T: Float>(
    [x, gamma, dy, dx, dgamma]: [usize; 5],
    workspace: usize,
    rows: usize,
    cols: usize,
) -> Result<(RowProblem, u32), Error> {
    const OP: &str = "rms_norm_backward";
    let p = RowProblem::new(
        OP,
        T::TYPE,
        rows,
        cols,
        Some(MAX_PARTS),
        BACKWARD_HELD_ELEMS,
    )?;
    p.check_matrix(OP, "x", x)?;
    p.check_row(OP, "gamma", gamma)?;
    p.check_matrix(OP, "dy", dy)?;
    p.check_matrix(OP, "dx", dx)?;
    p.check_row(OP, "dgamma", dgamma)?;
    check_workspace(OP, workspace, parts(rows) * cols)?;
    Ok((p, used_parts(rows)))
}

/// The LayerNorm problem once every buffer's length checks out (`x, gamma, dy, dx, dgamma,
/// dbeta` and the workspace), with the workspace rows of each block its launch fills.
fn layer_problem<T: Float>(
    [x, gamma, dy, dx, dgamma, dbeta]: [usize; 6],
    workspace: usize,
    rows: usize,
    cols: usize,
) -> Result<(RowProblem, u32), Error> {
    const OP: &str = "layer_norm_backward";
    let p = RowProblem::new(
        OP,
        T::TYPE,
        rows,
        cols,
        Some(MAX_PARTS),
        BACKWARD_HELD_ELEMS,
    )?;
    p.check_matrix(OP, "x", x)?;
    p.check_row(OP, "gamma", gamma)?;
    p.check_matrix(OP, "dy", dy)?;
    p.check_matrix(OP, "dx", dx)?;
    p.check_row(OP, "dgamma", dgamma)?;
    p.check_row(OP, "dbeta", dbeta)?;
    check_workspace(OP, workspace, 2 * parts(rows) * cols)?;
    Ok((p, used_parts(rows)))
}

/// Workspace rows a launch over `rows` rows fills: one per block, none without rows (the
/// column sums then write zeros).
fn used_parts(rows: usize) -> u32 {
    if rows > 0 {
        parts(rows) as u32
    } else {
        0
    }
}

/// `out = Σ` over the `parts` rows of the `parts × cols` matrix at `offset` in `partial`.
fn sum_columns<T: Float>(
    stream: &Stream,
    partial: &Buffer<f32>,
    offset: u32,
    out: &mut Buffer<T>,
    parts: u32,
    cols: u32,
) -> Result<(), Error> {
    let grid = cols.div_ceil(SUM_COLS).max(1);
    let cfg = LaunchConfig::linear(grid, SUM_THREADS);
    column_sum_kernel::norm_column_sum(stream, cfg, partial, out, offset, parts, cols)?;
    Ok(())
}
