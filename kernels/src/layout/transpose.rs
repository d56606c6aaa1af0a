//! 2-D transpose `[R, C] → [C, R]` through a shared 32 × 33 tile (the padding column keeps the
//! transposed reads free of bank conflicts); loads and stores are coalesced along rows of the
//! input and of the output. Elements travel as raw bits.

use super::transpose_kernel;
use crate::Float;
use crate::{check_len, Error, FloatType};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Largest grid extent along y.
const MAX_GRID_Y: usize = 65535;

/// `y = xᵀ` for a row-major `rows × cols` matrix `x` (`y` is `cols × rows`).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 6)?;
/// kernels::layout::transpose(&stream, &x, &mut y, 2, 3)?;
/// assert_eq!(y.to_host(&stream)?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// # Ok(()) }
/// ```
pub fn transpose<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    let lens = [x.len(), y.len()];
    checked_launch(stream, x, y, rows, cols, lens)
}

/// [`transpose`] of the first `rows × cols` elements of `x` into the first of `y`, either of
/// which may be longer (a GEMM's workspace, sized for its largest problem).
pub(crate) fn transpose_prefix<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    let n = rows.saturating_mul(cols);
    let lens = [x.len().min(n), y.len().min(n)];
    checked_launch(stream, x, y, rows, cols, lens)
}

/// Checks the type and the buffers' lengths as `lens` gives them (whole, or the prefix a
/// longer buffer offers), then launches.
fn checked_launch<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    lens: [usize; 2],
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("transpose")?;
    if !check(lens, rows, cols)? {
        return Ok(());
    }
    // Pairs of 16-bit elements where both sides' rows start 4-byte aligned.
    let v = if T::TYPE == FloatType::Bf16 && rows.is_multiple_of(2) && cols.is_multiple_of(2) {
        2
    } else {
        1
    };
    let cfg = LaunchConfig {
        grid: [
            (cols as u32).div_ceil(transpose_kernel::tile_cols(v)),
            (rows as u32).div_ceil(transpose_kernel::TILE_ROWS),
            1,
        ],
        block: [256, 1, 1],
        dynamic_shared_bytes: 0,
    };
    transpose_kernel::transpose::<T>(stream, cfg, v, x, y, rows as u32, cols as u32)?;
    Ok(())
}

/// Checks the sizes of a transpose; false when there is nothing to move.
fn check([x, y]: [usize; 2], rows: usize, cols: usize) -> Result<bool, Error> {
    const OP: &str = "transpose";
    let n = rows
        .checked_mul(cols)
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| Error::Unsupported {
            op: OP,
            detail: format!("{rows} × {cols} exceeds {} elements; split it", u32::MAX),
        })?;
    let tile_rows = transpose_kernel::TILE_ROWS as usize;
    if rows.div_ceil(tile_rows) > MAX_GRID_Y {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{rows} rows need more than {MAX_GRID_Y} tiles of {tile_rows}; transpose in slices"
            ),
        });
    }
    let why = || format!("rows × cols = {rows} × {cols}");
    check_len(OP, "x", x, n, why)?;
    check_len(OP, "y", y, n, why)?;
    Ok(n > 0)
}
