//! Conversions between the [`Float`](crate::Float) types (f32, bf16, f16; narrowing rounds to
//! nearest even). A same-type cast is a vectorized copy.

mod convert_kernel;
pub mod reference;

use crate::op_kernel::kernel_refs;
use crate::{check_len, Error, Float, OpKernel};
use kernel_runtime::{Buffer, BufferView, BufferViewMut, Element, LaunchConfig, Stream};

static CASTS: [OpKernel; 9] = OpKernel::instances(convert_kernel::CAST_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![CASTS[0 1 2 3 4 5 6 7 8]];

/// Converts `src` into `dst` element by element (same length). Narrowing rounds to nearest
/// even; NaN stays NaN, ±∞ stays ±∞, and values beyond the target's range become ±∞.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let src = Buffer::from_host(&stream, &[1.0f32, 1.00390625, -2.5])?;
/// let mut dst = Buffer::<Bf16>::zeros(&stream, 3)?;
/// kernels::cast::cast(&stream, &src, &mut dst)?;
/// let back: Vec<f32> = dst.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
/// assert_eq!(back, vec![1.0, 1.0, -2.5]); // 1 + 2⁻⁸ ties to the even 1.0
/// # Ok(()) }
/// ```
pub fn cast<S: Float, D: Float>(
    stream: &Stream,
    src: &Buffer<S>,
    dst: &mut Buffer<D>,
) -> Result<(), Error> {
    launch_cast::<S, D>(stream, "cast", "convert", src.view(), dst.view_mut())
}

/// Copies `src` into `dst` (both of element type `T`, same length) where either may be a
/// range of a larger buffer, with the same-type cast kernel. The kernel moves 16-byte vectors,
/// so both views must start 16-byte aligned: callers pass ranges that start at a multiple of
/// [`TENSOR_ALIGN`](crate::optim::TENSOR_ALIGN) elements.
pub(crate) fn copy_view<T: Float>(
    stream: &Stream,
    src: BufferView<'_>,
    dst: BufferViewMut<'_>,
) -> Result<(), Error> {
    launch_cast::<T, T>(stream, "copy", "copy", src, dst)
}

/// Checks that `dst` is as long as `src` and that the length fits the kernels' u32 count;
/// `verb` names what the caller does in the error for an oversized request.
fn check_cast(op: &'static str, verb: &str, src: usize, dst: usize) -> Result<u32, Error> {
    check_len(op, "dst", dst, src, || {
        format!("the same length as `src` ({src})")
    })?;
    u32::try_from(src).map_err(|_| Error::Unsupported {
        op,
        detail: format!("{src} elements exceed {}; {verb} in pieces", u32::MAX),
    })
}

/// Checks the lengths and launches the `#[kernel]` cast from `S` to `D` on two views.
fn launch_cast<S: Element, D: Element>(
    stream: &Stream,
    op: &'static str,
    verb: &str,
    src: BufferView<'_>,
    mut dst: BufferViewMut<'_>,
) -> Result<(), Error> {
    let n = check_cast(op, verb, src.len(), dst.len())?;
    if n == 0 {
        return Ok(());
    }
    let (s, d) = (S::SCALAR.bytes(), D::SCALAR.bytes());
    let piece = (16 / s).min(16 / d);
    // A block per tile, the last one partial; the grid strides past this many.
    let blocks = n
        .div_ceil(convert_kernel::tile_elems(s))
        .min(MAX_CAST_BLOCKS);
    let cfg = LaunchConfig::linear(blocks, convert_kernel::THREADS);
    convert_kernel::cast::<S, D>(stream, cfg, piece, &src, &mut dst, n)?;
    Ok(())
}

/// The cast grid never exceeds this many blocks; each strides over the tiles past it.
const MAX_CAST_BLOCKS: u32 = 1 << 20;
