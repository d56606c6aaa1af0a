//! Conversions between storage types (f32, bf16, f16; narrowing rounds to nearest even), and
//! the [`Element`] trait the ops are generic over. A same-type cast is a vectorized copy.

mod convert_kernel;
mod element;
pub mod reference;

pub use element::Element;

use crate::codegen::map::{map_kernel, map_launch, step_elems, MapSig};
use crate::codegen::tensor::Format;
use crate::codegen::{kernel_refs, kernel_table};
use crate::{check_len, Error, OpKernel};
use kernel_dsl::ir::Kernel;
use kernel_dsl::ScalarType;
use kernel_runtime::{
    Bf16, Buffer, BufferView, BufferViewMut, DeviceElem, KernelArg, LaunchConfig, Stream, F16,
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for kernel_runtime::Bf16 {}
    impl Sealed for kernel_runtime::F16 {}
}

/// An element type [`cast`] converts between: `f32`, [`Bf16`] or [`F16`].
///
/// ```
/// fn takes<T: kernels::cast::CastElem>() {}
/// takes::<kernel_runtime::F16>();
/// ```
pub trait CastElem: DeviceElem + sealed::Sealed {}
impl CastElem for f32 {}
impl CastElem for Bf16 {}
impl CastElem for F16 {}

const FORMATS: [Format; 3] = [Format::F32, Format::Bf16, Format::F16];

/// Every (source, destination) pair, in [`pair_index`] order.
const PAIRS: [(Format, Format); 9] = {
    let mut out = [(Format::F32, Format::F32); 9];
    let mut i = 0;
    while i < 9 {
        out[i] = (FORMATS[i / 3], FORMATS[i % 3]);
        i += 1;
    }
    out
};

fn pair_index(src: Format, dst: Format) -> usize {
    let pos = |f| match f {
        Format::F32 => 0,
        Format::Bf16 => 1,
        Format::F16 => 2,
    };
    pos(src) * 3 + pos(dst)
}

fn format_of(t: ScalarType) -> Format {
    match t {
        ScalarType::Bf16 => Format::Bf16,
        ScalarType::F16 => Format::F16,
        _ => Format::F32,
    }
}

fn cast_kernel((src, dst): (Format, Format)) -> Kernel {
    let sig = MapSig {
        name: format!("cast_{}_to_{}", src.suffix(), dst.suffix()),
        inputs: &[("src", src)],
        outputs: &[("dst", dst)],
        scalars: &[],
    };
    map_kernel(&sig, |_, x, _| vec![x[0]])
}

static CASTS: [OpKernel; 9] = OpKernel::instances(convert_kernel::CAST_INSTANCES);
kernel_table!(static CASTS_BUILDER = cast_kernel, PAIRS, [0 1 2 3 4 5 6 7 8]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    CASTS[0 1 2 3 4 5 6 7 8],
    CASTS_BUILDER[0 1 2 3 4 5 6 7 8],
];

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
pub fn cast<S: CastElem, D: CastElem>(
    stream: &Stream,
    src: &Buffer<S>,
    dst: &mut Buffer<D>,
) -> Result<(), Error> {
    launch_cast::<S, D>(stream, "cast", "convert", src.view(), dst.view_mut())
}

/// The builder-written kernel that [`cast`] replaces, kept only until the two have been
/// measured side by side (`bench_cast`).
#[doc(hidden)]
pub fn cast_builder<S: CastElem, D: CastElem>(
    stream: &Stream,
    src: &Buffer<S>,
    dst: &mut Buffer<D>,
) -> Result<(), Error> {
    let formats = [format_of(S::SCALAR), format_of(D::SCALAR)];
    let n = check_cast("cast", "convert", src.len(), dst.len())?;
    if n == 0 {
        return Ok(());
    }
    let [sf, df] = formats;
    let cfg = map_launch(n, step_elems(formats));
    let args = [
        KernelArg::from(src),
        KernelArg::from(&mut *dst),
        KernelArg::from(n),
    ];
    stream.launch(CASTS_BUILDER[pair_index(sf, df)].artifacts(), cfg, &args)?;
    Ok(())
}

/// Copies `src` into `dst` (both of element type `T`, same length) where either may be a
/// range of a larger buffer, with the same-type cast kernel. The kernel moves 16-byte vectors,
/// so both views must start 16-byte aligned: callers pass ranges that start at a multiple of
/// [`TENSOR_ALIGN`](crate::optim::TENSOR_ALIGN) elements.
pub(crate) fn copy_view<T: Element>(
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
fn launch_cast<S: DeviceElem, D: DeviceElem>(
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
