//! The LayerNorm forward op.

use super::layer_kernel;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::HELD_ELEMS;
use crate::Error;
use crate::Float;
use kernel_runtime::{Buffer, Stream};

/// LayerNorm over the rows of a `rows × cols` matrix:
/// `y = (x − mean) / √(var + eps) · γ + β` with the biased variance, computed in f32.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 3.0])?;
/// let gamma = Buffer::from_host(&stream, &[1.0f32, 1.0])?;
/// let beta = Buffer::from_host(&stream, &[0.5f32, 0.5])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::norm::layer_norm(&stream, &x, &gamma, &beta, &mut y, 1, 2, 0.0)?;
/// assert_eq!(y.to_host(&stream)?, vec![-0.5, 1.5]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn layer_norm<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    beta: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("layer_norm")?;
    let lens = [x.len(), gamma.len(), beta.len(), y.len()];
    let Some(p) = problem::<T>(lens, rows, cols)? else {
        return Ok(());
    };
    // Blocks of at most 512 threads, as the kernel's registers need; unlike RMSNorm,
    // 1024-thread blocks measured slower here.
    let (w, cta) = p.instance(T::TYPE);
    layer_kernel::layer_norm(
        stream,
        p.launch.cfg,
        w,
        cta,
        x,
        gamma,
        beta,
        y,
        p.rows,
        p.cols,
        eps,
    )?;
    Ok(())
}

/// The problem once every buffer's length checks out (`x, gamma, beta, y`), or `None` where
/// there are no rows.
fn problem<T: Float>(
    [x, gamma, beta, y]: [usize; 4],
    rows: usize,
    cols: usize,
) -> Result<Option<RowProblem>, Error> {
    const OP: &str = "layer_norm";
    let p = RowProblem::new(OP, T::TYPE, rows, cols, None, HELD_ELEMS)?;
    p.check_matrix(OP, "x", x)?;
    p.check_row(OP, "gamma", gamma)?;
    p.check_row(OP, "beta", beta)?;
    p.check_matrix(OP, "y", y)?;
    Ok((rows > 0).then_some(p))
}
