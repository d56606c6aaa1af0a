//! Kernel arguments as the typed launchers pass them: scalars by value, buffers as views that
//! carry their element type and mutability, so a launch can be checked against the kernel's
//! metadata before it reaches a driver.

use crate::buffer::{Buffer, BufferCore};
use crate::element::{Bf16, Element, F16};
use crate::tensor_map::TensorMap;
use kernel_dsl::{ParamKind, ScalarType};
use std::sync::Arc;

/// A scalar kernel argument with its PTX type.
///
/// ```
/// use kernel_runtime::ScalarValue;
/// use kernel_dsl::ScalarType;
/// assert_eq!(ScalarValue::from(3u32).ty(), ScalarType::U32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F16(F16),
    Bf16(Bf16),
    F32(f32),
    F64(f64),
}

impl ScalarValue {
    /// The PTX type of this value.
    ///
    /// ```
    /// use kernel_runtime::ScalarValue;
    /// assert_eq!(ScalarValue::F32(1.0).ty(), kernel_dsl::ScalarType::F32);
    /// ```
    pub fn ty(self) -> ScalarType {
        match self {
            ScalarValue::U8(_) => ScalarType::U8,
            ScalarValue::U16(_) => ScalarType::U16,
            ScalarValue::U32(_) => ScalarType::U32,
            ScalarValue::U64(_) => ScalarType::U64,
            ScalarValue::I8(_) => ScalarType::S8,
            ScalarValue::I16(_) => ScalarType::S16,
            ScalarValue::I32(_) => ScalarType::S32,
            ScalarValue::I64(_) => ScalarType::S64,
            ScalarValue::F16(_) => ScalarType::F16,
            ScalarValue::Bf16(_) => ScalarType::Bf16,
            ScalarValue::F32(_) => ScalarType::F32,
            ScalarValue::F64(_) => ScalarType::F64,
        }
    }

    /// The value's little-endian bit pattern, zero-extended to 64 bits (the driver reads only
    /// the parameter's own size from it).
    ///
    /// ```
    /// use kernel_runtime::ScalarValue;
    /// assert_eq!(ScalarValue::I32(-1).bits(), 0xffff_ffff);
    /// assert_eq!(ScalarValue::F32(1.0).bits(), 0x3f80_0000);
    /// ```
    pub fn bits(self) -> u64 {
        match self {
            ScalarValue::U8(v) => v as u64,
            ScalarValue::U16(v) => v as u64,
            ScalarValue::U32(v) => v as u64,
            ScalarValue::U64(v) => v,
            ScalarValue::I8(v) => v as u8 as u64,
            ScalarValue::I16(v) => v as u16 as u64,
            ScalarValue::I32(v) => v as u32 as u64,
            ScalarValue::I64(v) => v as u64,
            ScalarValue::F16(v) => v.to_bits() as u64,
            ScalarValue::Bf16(v) => v.to_bits() as u64,
            ScalarValue::F32(v) => v.to_bits() as u64,
            ScalarValue::F64(v) => v.to_bits(),
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for ScalarValue {
            fn from(v: $t) -> ScalarValue { ScalarValue::$v(v) }
        }
        impl From<$t> for KernelArg<'_> {
            fn from(v: $t) -> Self { KernelArg::Scalar(ScalarValue::$v(v)) }
        }
    )*};
}

scalar_from!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16, i32 => I32,
    i64 => I64, F16 => F16, Bf16 => Bf16, f32 => F32, f64 => F64);

/// A read-only view of (part of) a device buffer, for a `&[T]` parameter.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let buf = kernel_runtime::Buffer::<u32>::zeros(&stream, 16)?;
/// let view = buf.view();
/// assert_eq!((view.elem(), view.len()), (kernel_dsl::ScalarType::U32, 16));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct BufferView<'a> {
    pub(crate) core: &'a Arc<BufferCore>,
    elem: ScalarType,
    offset_bytes: usize,
    len: usize,
}

/// A writable view of (part of) a device buffer, for a `&mut [T]` parameter. It borrows the
/// buffer mutably, so no other view of it can be passed to the same launch.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let mut buf = kernel_runtime::Buffer::<f32>::zeros(&stream, 16)?;
/// assert_eq!(buf.view_mut().len(), 16);
/// # Ok(()) }
/// ```
pub struct BufferViewMut<'a> {
    pub(crate) core: &'a Arc<BufferCore>,
    elem: ScalarType,
    offset_bytes: usize,
    len: usize,
}

macro_rules! view_common {
    ($t:ident) => {
        impl<'a> $t<'a> {
            pub(crate) fn new(
                core: &'a Arc<BufferCore>,
                elem: ScalarType,
                offset_bytes: usize,
                len: usize,
            ) -> Self {
                $t {
                    core,
                    elem,
                    offset_bytes,
                    len,
                }
            }

            /// The element type.
            ///
            /// ```
            /// # fn main() -> Result<(), kernel_runtime::Error> {
            /// let stream = kernel_runtime::Device::emulator().stream()?;
            /// let mut buf = kernel_runtime::Buffer::<i64>::zeros(&stream, 1)?;
            /// assert_eq!(buf.view_mut().elem(), kernel_dsl::ScalarType::S64);
            /// # Ok(()) }
            /// ```
            pub fn elem(&self) -> ScalarType {
                self.elem
            }

            /// Number of elements in view.
            ///
            /// ```
            /// # fn main() -> Result<(), kernel_runtime::Error> {
            /// let stream = kernel_runtime::Device::emulator().stream()?;
            /// let buf = kernel_runtime::Buffer::<u8>::zeros(&stream, 5)?;
            /// assert_eq!(buf.slice(1..5)?.len(), 4);
            /// # Ok(()) }
            /// ```
            pub fn len(&self) -> usize {
                self.len
            }

            /// True for a view of no elements.
            ///
            /// ```
            /// # fn main() -> Result<(), kernel_runtime::Error> {
            /// let stream = kernel_runtime::Device::emulator().stream()?;
            /// let buf = kernel_runtime::Buffer::<u8>::zeros(&stream, 5)?;
            /// assert!(buf.slice(2..2)?.is_empty());
            /// # Ok(()) }
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The address the kernel receives.
            pub(crate) fn addr(&self) -> u64 {
                self.core.addr + self.offset_bytes as u64
            }
        }
    };
}

view_common!(BufferView);
view_common!(BufferViewMut);

/// One argument of a launch, in parameter order. Typed launchers build these with `From`:
/// a scalar value, `&Buffer<T>` (for `&[T]`) or `&mut Buffer<T>` (for `&mut [T]`).
///
/// ```
/// use kernel_runtime::KernelArg;
/// use kernel_dsl::{ParamKind, ScalarType};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let mut out = kernel_runtime::Buffer::<f32>::zeros(&stream, 4)?;
/// let args = [KernelArg::from(&mut out), KernelArg::from(4u32)];
/// assert_eq!(args[0].kind(), ParamKind::Slice { elem: ScalarType::F32, mutable: true });
/// # Ok(()) }
/// ```
pub enum KernelArg<'a> {
    Scalar(ScalarValue),
    Slice(BufferView<'a>),
    SliceMut(BufferViewMut<'a>),
    /// A tensor map, passed by value (its 128 bytes).
    TensorMap(&'a TensorMap),
}

impl KernelArg<'_> {
    /// The parameter kind this argument fills.
    ///
    /// ```
    /// use kernel_runtime::KernelArg;
    /// use kernel_dsl::{ParamKind, ScalarType};
    /// assert_eq!(KernelArg::from(1.5f64).kind(), ParamKind::Scalar(ScalarType::F64));
    /// ```
    pub fn kind(&self) -> ParamKind {
        match self {
            KernelArg::Scalar(v) => ParamKind::Scalar(v.ty()),
            KernelArg::Slice(v) => ParamKind::Slice {
                elem: v.elem,
                mutable: false,
            },
            KernelArg::SliceMut(v) => ParamKind::Slice {
                elem: v.elem,
                mutable: true,
            },
            KernelArg::TensorMap(_) => ParamKind::TensorMap,
        }
    }

    pub(crate) fn core(&self) -> Option<&Arc<BufferCore>> {
        match self {
            KernelArg::Scalar(_) => None,
            KernelArg::Slice(v) => Some(v.core),
            KernelArg::SliceMut(v) => Some(v.core),
            KernelArg::TensorMap(m) => Some(&m.core),
        }
    }

    /// The 64-bit parameter slot: a scalar's bits or a buffer's address (a tensor map, passed
    /// by its bytes, has none).
    pub(crate) fn slot(&self) -> u64 {
        match self {
            KernelArg::Scalar(v) => v.bits(),
            KernelArg::Slice(v) => v.addr(),
            KernelArg::SliceMut(v) => v.addr(),
            KernelArg::TensorMap(_) => 0,
        }
    }
}

impl<'a> From<&'a TensorMap> for KernelArg<'a> {
    fn from(m: &'a TensorMap) -> Self {
        KernelArg::TensorMap(m)
    }
}

impl From<ScalarValue> for KernelArg<'_> {
    fn from(v: ScalarValue) -> Self {
        KernelArg::Scalar(v)
    }
}

impl<'a> From<BufferView<'a>> for KernelArg<'a> {
    fn from(v: BufferView<'a>) -> Self {
        KernelArg::Slice(v)
    }
}

impl<'a> From<BufferViewMut<'a>> for KernelArg<'a> {
    fn from(v: BufferViewMut<'a>) -> Self {
        KernelArg::SliceMut(v)
    }
}

impl<'a, T: Element> From<&'a Buffer<T>> for KernelArg<'a> {
    fn from(b: &'a Buffer<T>) -> Self {
        KernelArg::Slice(b.view())
    }
}

impl<'a, T: Element> From<&'a mut Buffer<T>> for KernelArg<'a> {
    fn from(b: &'a mut Buffer<T>) -> Self {
        KernelArg::SliceMut(b.view_mut())
    }
}

/// What a generated launcher takes for a `&[T]` kernel parameter: a whole [`Buffer<T>`], or a
/// [`BufferView`] of part of one (whose element type is checked against `T` at launch, since a
/// view does not carry it in its type).
///
/// ```
/// use kernel_runtime::{Buffer, KernelArg, SliceArg};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let buf = Buffer::<f32>::zeros(&stream, 8)?;
/// fn len_of<A: SliceArg<f32> + ?Sized>(a: &A) -> usize {
///     match a.slice_arg() {
///         KernelArg::Slice(v) => v.len(),
///         _ => unreachable!(),
///     }
/// }
/// assert_eq!((len_of(&buf), len_of(&buf.slice(2..5)?)), (8, 3));
/// # Ok(()) }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `&[{T}]` kernel parameter takes a `&Buffer<{T}>` or a `&BufferView`, not `&{Self}`",
    label = "expected `&Buffer<{T}>` or `&BufferView`"
)]
pub trait SliceArg<T: Element> {
    /// The read-only argument this stands for.
    fn slice_arg(&self) -> KernelArg<'_>;
}

/// What a generated launcher takes for a `&mut [T]` kernel parameter: a whole
/// [`Buffer<T>`], or a [`BufferViewMut`] of part of one (element type checked at launch).
///
/// ```
/// use kernel_runtime::{Buffer, KernelArg, SliceArgMut};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let mut buf = Buffer::<f32>::zeros(&stream, 8)?;
/// fn is_mut<A: SliceArgMut<f32> + ?Sized>(a: &mut A) -> bool {
///     matches!(a.slice_arg_mut(), KernelArg::SliceMut(_))
/// }
/// assert!(is_mut(&mut buf) && is_mut(&mut buf.slice_mut(0..4)?));
/// # Ok(()) }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `&mut [{T}]` kernel parameter takes a `&mut Buffer<{T}>` or a `&mut BufferViewMut`, not `&mut {Self}`",
    label = "expected `&mut Buffer<{T}>` or `&mut BufferViewMut`"
)]
pub trait SliceArgMut<T: Element> {
    /// The writable argument this stands for.
    fn slice_arg_mut(&mut self) -> KernelArg<'_>;
}

impl<T: Element> SliceArg<T> for Buffer<T> {
    fn slice_arg(&self) -> KernelArg<'_> {
        KernelArg::Slice(self.view())
    }
}

impl<T: Element> SliceArg<T> for BufferView<'_> {
    fn slice_arg(&self) -> KernelArg<'_> {
        KernelArg::Slice(*self)
    }
}

impl<T: Element, A: SliceArg<T> + ?Sized> SliceArg<T> for &A {
    fn slice_arg(&self) -> KernelArg<'_> {
        (**self).slice_arg()
    }
}

impl<T: Element> SliceArgMut<T> for Buffer<T> {
    fn slice_arg_mut(&mut self) -> KernelArg<'_> {
        KernelArg::SliceMut(self.view_mut())
    }
}

impl<T: Element> SliceArgMut<T> for BufferViewMut<'_> {
    fn slice_arg_mut(&mut self) -> KernelArg<'_> {
        KernelArg::SliceMut(BufferViewMut::new(
            self.core,
            self.elem,
            self.offset_bytes,
            self.len,
        ))
    }
}

impl<T: Element, A: SliceArgMut<T> + ?Sized> SliceArgMut<T> for &mut A {
    fn slice_arg_mut(&mut self) -> KernelArg<'_> {
        (**self).slice_arg_mut()
    }
}
