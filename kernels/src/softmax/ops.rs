//! The softmax ops: shape checks, then one launch.

use super::{backward, forward, Mask};
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::{Group, HELD_ELEMS};
use crate::rowwise::Access;
use crate::Float;
use crate::{Error, FloatType};
use kernel_runtime::{Buffer, Stream};

/// The most threads a block-per-row softmax launch takes: the forward held-row kernel stays
/// within 64 registers holding 16 elements a thread, within 128 holding 32 (bf16 in 16-byte
/// chunks); the backward, which holds two inputs, within 128 (`tests/instance_registers.rs` checks
/// each).
const HELD_ROW_THREADS: u32 = 1024;
const WIDE_HELD_ROW_THREADS: u32 = 512;
const BACKWARD_ROW_THREADS: u32 = 512;

/// Threads of a streamed row's block: 1024 for f32 in 16-byte chunks (within 64 registers),
/// so that one block fills an SM's registers, each SM streams one row, and the second pass
/// finds it in L2; otherwise 512 (bf16 rows, at half the bytes, lost 6 points of copy with
/// 1024 threads; one-element rows need up to 128 registers). BENCHMARKS.md has the figures.
fn streamed_row_threads(storage: FloatType, access: Access) -> u32 {
    match (storage, access) {
        (FloatType::F32, Access::Vector) => 1024,
        _ => 512,
    }
}

/// The planned problem, with block sizes for the kernel that runs it, and whether that kernel
/// is the streaming one. Each thread of the held-row kernel keeps 16 elements of its row in
/// registers, or 32 where a block owns a bf16 row in 16-byte chunks, so that a wide bf16 row
/// keeps as many bytes in flight as an f32 one (narrow rows run more warps instead).
fn plan<T: Float>(op: &'static str, rows: usize, cols: usize) -> Result<(RowProblem, bool), Error> {
    let p = RowProblem::new(op, T::TYPE, rows, cols, None, HELD_ELEMS)?;
    let wide = p.with_row_threads(T::TYPE, 2 * HELD_ELEMS, WIDE_HELD_ROW_THREADS);
    let wide = Some(wide).filter(|w| {
        (T::TYPE, w.access, w.group()) == (FloatType::Bf16, Access::Vector, Group::Block)
    });
    let (p, held) = match wide {
        Some(w) => (w, 2 * HELD_ELEMS),
        None => (
            p.with_row_threads(T::TYPE, HELD_ELEMS, HELD_ROW_THREADS),
            HELD_ELEMS,
        ),
    };
    if p.holds_rows(T::TYPE, held) {
        return Ok((p, false));
    }
    Ok((
        p.with_row_threads(T::TYPE, HELD_ELEMS, streamed_row_threads(T::TYPE, p.access)),
        true,
    ))
}

/// `y = softmax(scale · x)` over each row of a `rows × cols` matrix, computed in f32 and stored
/// as `T`; entries outside `mask` are 0.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::softmax::{softmax, Mask};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 1.0, 3.0, 1.0])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 4)?;
/// softmax(&stream, &x, &mut y, 2, 2, 1.0, Mask::Causal { queries: 2 })?;
/// let y = y.to_host(&stream)?;
/// assert_eq!(y[..2], [1.0, 0.0]);
/// assert!((y[2] - 0.880797).abs() < 1e-5);
/// # Ok(()) }
/// ```
pub fn softmax<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    scale: f32,
    mask: Mask,
) -> Result<(), Error> {
    const OP: &str = "softmax";
    crate::float::f32_or_bf16::<T>(OP)?;
    let (p, streaming) = plan::<T>(OP, rows, cols)?;
    p.check_matrix(OP, "x", x.len())?;
    p.check_matrix(OP, "y", y.len())?;
    let (queries, offset) = mask.kernel_params(OP, rows, cols)?;
    if rows == 0 {
        return Ok(());
    }
    let (w, cta) = p.instance(T::TYPE);
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    let (rows, cols) = (p.rows, p.cols);
    if streaming {
        forward::softmax_streaming(
            stream,
            p.launch.cfg,
            w,
            cta,
            x,
            y,
            rows,
            cols,
            scale_log2,
            queries,
            offset,
        )?;
    } else {
        forward::softmax(
            stream,
            p.launch.cfg,
            w,
            cta,
            x,
            y,
            rows,
            cols,
            scale_log2,
            queries,
            offset,
        )?;
    }
    Ok(())
}

/// The gradient of [`softmax`]: given its output `y` and the upstream gradient `dy`,
/// `dx = scale · y ⊙ (dy − ⟨y, dy⟩)` per row (masked entries, where `y = 0`, get 0).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let y = Buffer::from_host(&stream, &[0.5f32, 0.5])?;
/// let dy = Buffer::from_host(&stream, &[1.0f32, 0.0])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::softmax::softmax_backward(&stream, &y, &dy, &mut dx, 1, 2, 2.0)?;
/// assert_eq!(dx.to_host(&stream)?, vec![0.5, -0.5]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn softmax_backward<T: Float>(
    stream: &Stream,
    y: &Buffer<T>,
    dy: &Buffer<T>,
    dx: &mut Buffer<T>,
    rows: usize,
    cols: usize,
    scale: f32,
) -> Result<(), Error> {
    const OP: &str = "softmax_backward";
    crate::float::f32_or_bf16::<T>(OP)?;
    let p = RowProblem::new(OP, T::TYPE, rows, cols, None, HELD_ELEMS)?.with_row_threads(
        T::TYPE,
        HELD_ELEMS,
        BACKWARD_ROW_THREADS,
    );
    p.check_matrix(OP, "y", y.len())?;
    p.check_matrix(OP, "dy", dy.len())?;
    p.check_matrix(OP, "dx", dx.len())?;
    if rows == 0 {
        return Ok(());
    }
    let (w, cta) = p.instance(T::TYPE);
    backward::softmax_backward(
        stream,
        p.launch.cfg,
        w,
        cta,
        y,
        dy,
        dx,
        p.rows,
        p.cols,
        scale,
    )?;
    Ok(())
}
