//! 2-D transpose `[R, C] → [C, R]` through a shared 32 × 33 tile (the padding column keeps the
//! transposed reads free of bank conflicts); loads and stores are coalesced along rows of the
//! input and of the output. Elements travel as raw bits.

use super::transpose_kernel;
use crate::cast::Element;
use crate::codegen::tensor::{tensor_param, Access};
use crate::rowwise::moves::{from_word, load_bits, store_bits, to_word};
use crate::{check_len, Error, Storage};
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};

const TILE: u32 = 32;
/// Thread rows of a CTA; each thread moves `TILE / ROWS` elements.
const ROWS: u32 = 8;
/// Largest grid extent along y.
const MAX_GRID_Y: usize = 65535;

/// Parameters: `x, y, rows, cols`. Grid: `⌈cols/32⌉ × ⌈rows/32⌉` CTAs of 32 × 8 threads.
pub(crate) fn transpose_tiles(storage: Storage) -> Kernel {
    let mut b = KernelBuilder::new(format!("transpose_{}", storage.suffix()));
    b.reqntid([TILE, ROWS, 1]);
    let x = tensor_param(&mut b, "x", storage, false);
    let y = tensor_param(&mut b, "y", storage, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let tile = b.shared_array::<U32>("tile", TILE * (TILE + 1));
    let tx = b.tid(Dim::X);
    let ty = b.tid(Dim::Y);
    let bx = b.ctaid(Dim::X);
    let by = b.ctaid(Dim::Y);
    let tile_c = b.const_u32(TILE);
    let pitch = b.const_u32(TILE + 1);
    let zero = b.const_u32(0);
    let step = b.const_u32(ROWS);

    let col = b.mad(bx, tile_c, tx);
    let row0 = b.mul(by, tile_c);
    let col_in = b.setp(Cmp::Lt, col, cols);
    b.for_range(zero, tile_c, step, |b, j| {
        let tj = b.add(ty, j);
        let row = b.add(row0, tj);
        let row_in = b.setp(Cmp::Lt, row, rows);
        b.if_(row_in, |b| {
            b.if_(col_in, |b| {
                let at = b.mad(row, cols, col);
                let v = load_bits(b, &x, at, Access::Scalar);
                let v = to_word(b, v);
                let slot = b.mad(tj, pitch, tx);
                b.st_shared(&tile, slot, v);
            });
        });
    });
    b.bar_sync();
    let out_col = b.mad(by, tile_c, tx);
    let out_row0 = b.mul(bx, tile_c);
    let out_col_in = b.setp(Cmp::Lt, out_col, rows);
    b.for_range(zero, tile_c, step, |b, j| {
        let tj = b.add(ty, j);
        let out_row = b.add(out_row0, tj);
        let row_in = b.setp(Cmp::Lt, out_row, cols);
        b.if_(row_in, |b| {
            b.if_(out_col_in, |b| {
                let slot = b.mad(tx, pitch, tj);
                let v = b.ld_shared(&tile, slot);
                let v = from_word(b, v, y.format());
                let at = b.mad(out_row, rows, out_col);
                store_bits(b, &y, at, v);
            });
        });
    });
    b.finish()
}

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
pub fn transpose<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    if !check([x.len(), y.len()], rows, cols)? {
        return Ok(());
    }
    // Pairs of 16-bit elements where both sides' rows start 4-byte aligned.
    let v = if T::STORAGE == Storage::Bf16 && rows.is_multiple_of(2) && cols.is_multiple_of(2) {
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

/// The builder-written kernel that [`transpose`] replaces, kept only until the two have been
/// measured side by side (`bench_layout`).
#[doc(hidden)]
pub fn transpose_builder<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    if !check([x.len(), y.len()], rows, cols)? {
        return Ok(());
    }
    let cfg = LaunchConfig {
        grid: [
            (cols as u32).div_ceil(TILE),
            (rows as u32).div_ceil(TILE),
            1,
        ],
        block: [TILE, ROWS, 1],
        dynamic_shared_bytes: 0,
    };
    let args = [
        KernelArg::from(x),
        KernelArg::from(&mut *y),
        KernelArg::from(rows as u32),
        KernelArg::from(cols as u32),
    ];
    let kernel = match T::STORAGE {
        Storage::F32 => &super::TRANSPOSE_BUILDER[0],
        Storage::Bf16 => &super::TRANSPOSE_BUILDER[1],
    };
    stream.launch(kernel.artifacts(), cfg, &args)?;
    Ok(())
}

/// Checks the sizes of a transpose; false when there is nothing to move. (The grid's y extent
/// counts tiles of 32 rows for the builder kernel and of 64 for the `#[kernel]`, so one limit
/// serves both.)
fn check([x, y]: [usize; 2], rows: usize, cols: usize) -> Result<bool, Error> {
    const OP: &str = "transpose";
    let n = rows
        .checked_mul(cols)
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| Error::Unsupported {
            op: OP,
            detail: format!("{rows} × {cols} exceeds {} elements; split it", u32::MAX),
        })?;
    if rows.div_ceil(TILE as usize) > MAX_GRID_Y {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{rows} rows need more than {MAX_GRID_Y} tiles of 32; transpose in slices"
            ),
        });
    }
    let why = || format!("rows × cols = {rows} × {cols}");
    check_len(OP, "x", x, n, why)?;
    check_len(OP, "y", y, n, why)?;
    Ok(n > 0)
}
