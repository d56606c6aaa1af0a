//! Typed device buffers. Copies are ordered on the stream they are given, so a copy never races
//! a kernel queued on a non-blocking stream.

use crate::arg::{BufferView, BufferViewMut};
use crate::device::DeviceId;
use crate::element::{as_bytes, as_bytes_mut, Element};
use crate::emulator::EmuMemory;
use crate::error::{Error, Result};
use crate::stream::{Stream, StreamId};
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where a buffer's bytes live.
pub(crate) enum Storage {
    Cuda(cudarc::driver::CudaSlice<u8>),
    Emulator(EmuMemory),
}

/// The untyped part of a buffer, shared with graphs that captured it so that its memory
/// outlives every replay.
pub(crate) struct BufferCore {
    pub device: DeviceId,
    /// The device address (CUDA) or emulator address of the first byte.
    pub addr: u64,
    pub home_stream: StreamId,
    /// Set once the buffer is used on a stream other than the one that allocated it; the drop
    /// then waits for the device so the stream-ordered free cannot overtake that use.
    pub foreign_use: AtomicBool,
    pub storage: Storage,
}

impl Drop for BufferCore {
    fn drop(&mut self) {
        match &self.storage {
            Storage::Cuda(slice) => {
                if self.foreign_use.load(Ordering::Acquire) {
                    // Errors cannot be returned from drop; the context records them.
                    let ctx = slice.context();
                    ctx.record_err(ctx.synchronize());
                }
            }
            Storage::Emulator(mem) => mem.free(self.addr),
        }
    }
}

impl BufferCore {
    /// Called before a launch or copy on `stream`: the first use on a foreign stream waits for
    /// the allocating stream, so the allocation (stream-ordered) has happened. Inside a capture
    /// that wait cannot happen, so a first foreign use is allowed only on a stream forked from
    /// the allocating one (`fork_origin`), which the fork already orders after the allocation.
    pub(crate) fn note_use_on(
        &self,
        stream: StreamId,
        capturing: bool,
        fork_origin: Option<StreamId>,
    ) -> Result<()> {
        if stream == self.home_stream || self.foreign_use.load(Ordering::Acquire) {
            return Ok(());
        }
        if capturing && fork_origin == Some(self.home_stream) {
            self.foreign_use.store(true, Ordering::Release);
            return Ok(());
        }
        if capturing {
            return Err(Error::NotAllowedDuringCapture {
                op: "first use of a buffer allocated on another stream",
            });
        }
        if let Storage::Cuda(slice) = &self.storage {
            slice
                .stream()
                .synchronize()
                .map_err(|e| Error::driver("cuStreamSynchronize", e))?;
        }
        self.foreign_use.store(true, Ordering::Release);
        Ok(())
    }
}

/// A device buffer of `len` elements of `T`, on a CUDA device or the emulator.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let device = Device::emulator();
/// let stream = device.stream()?;
/// let buf = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
/// assert_eq!(buf.to_host(&stream)?, vec![1.0, 2.0, 3.0]);
/// # Ok(()) }
/// ```
pub struct Buffer<T: Element> {
    pub(crate) core: Arc<BufferCore>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> Buffer<T> {
    /// Allocates `len` elements on `stream`'s device, stream-ordered, filled with zero bytes.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::<u32>::zeros(&stream, 4)?;
    /// assert_eq!(buf.to_host(&stream)?, vec![0; 4]);
    /// # Ok(()) }
    /// ```
    pub fn zeros(stream: &Stream, len: usize) -> Result<Buffer<T>> {
        Buffer::alloc(stream, len, true)
    }

    /// Allocates `len` elements on `stream`'s device, stream-ordered, without filling them: on
    /// CUDA they hold whatever the memory held (any bit pattern is a value of `T`), which
    /// saves a pass over scratch that a kernel writes before anything reads it. The emulator
    /// zero-fills.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let scratch = kernel_runtime::Buffer::<f32>::uninit(&stream, 4)?;
    /// assert_eq!(scratch.len(), 4);
    /// # Ok(()) }
    /// ```
    pub fn uninit(stream: &Stream, len: usize) -> Result<Buffer<T>> {
        Buffer::alloc(stream, len, false)
    }

    fn alloc(stream: &Stream, len: usize, zeroed: bool) -> Result<Buffer<T>> {
        let elem_bytes = std::mem::size_of::<T>();
        let bytes = len
            .checked_mul(elem_bytes)
            .ok_or(Error::AllocationTooLarge { len, elem_bytes })?;
        let core = stream.alloc_core(bytes, zeroed)?;
        Ok(Buffer {
            core: Arc::new(core),
            len,
            _elem: PhantomData,
        })
    }

    /// Allocates a buffer holding a copy of `host`, stream-ordered.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::from_host(&stream, &[7i64, -7])?;
    /// assert_eq!(buf.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn from_host(stream: &Stream, host: &[T]) -> Result<Buffer<T>> {
        let mut buf = Buffer::zeros(stream, host.len())?;
        buf.copy_from_host(stream, host)?;
        Ok(buf)
    }

    /// Number of elements.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// assert_eq!(kernel_runtime::Buffer::<u8>::zeros(&stream, 3)?.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a buffer of no elements.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// assert!(kernel_runtime::Buffer::<u8>::zeros(&stream, 0)?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `host` into the buffer, ordered after the work already queued on `stream`. The
    /// host slice may be reused as soon as this returns.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let mut buf = kernel_runtime::Buffer::<f64>::zeros(&stream, 2)?;
    /// buf.copy_from_host(&stream, &[0.5, 0.25])?;
    /// assert!(buf.copy_from_host(&stream, &[1.0]).is_err());
    /// # Ok(()) }
    /// ```
    pub fn copy_from_host(&mut self, stream: &Stream, host: &[T]) -> Result<()> {
        if host.len() != self.len {
            return Err(Error::CopyLength {
                buffer_len: self.len,
                host_len: host.len(),
            });
        }
        stream.copy_in(&self.core, 0, as_bytes(host))
    }

    /// Copies every element of `src` into this buffer on the device, ordered on `stream` after
    /// the work already queued there (nothing waits for it). The lengths must match. Not
    /// allowed during graph capture.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let src = kernel_runtime::Buffer::from_host(&stream, &[1.5f32, -2.0])?;
    /// let mut dst = kernel_runtime::Buffer::<f32>::zeros(&stream, 2)?;
    /// dst.copy_from(&stream, &src)?;
    /// assert_eq!(dst.to_host(&stream)?, vec![1.5, -2.0]);
    /// # Ok(()) }
    /// ```
    pub fn copy_from(&mut self, stream: &Stream, src: &Buffer<T>) -> Result<()> {
        if src.len != self.len {
            return Err(Error::DeviceCopyLength {
                dst_len: self.len,
                src_len: src.len,
            });
        }
        stream.copy_within(&self.core, &src.core, self.len * std::mem::size_of::<T>())
    }

    /// Copies the buffer into `host`, ordered after the work already queued on `stream`, and
    /// waits for that copy (not for other streams) before returning.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::from_host(&stream, &[3u16, 4])?;
    /// let mut out = [0u16; 2];
    /// buf.copy_to_host(&stream, &mut out)?;
    /// assert_eq!(out, [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn copy_to_host(&self, stream: &Stream, host: &mut [T]) -> Result<()> {
        if host.len() != self.len {
            return Err(Error::CopyLength {
                buffer_len: self.len,
                host_len: host.len(),
            });
        }
        stream.copy_out(&self.core, 0, as_bytes_mut(host))
    }

    /// Copies the buffer into a new vector (see [`Buffer::copy_to_host`]).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::from_host(&stream, &[1i32, -1])?;
    /// assert_eq!(buf.to_host(&stream)?, vec![1, -1]);
    /// # Ok(()) }
    /// ```
    pub fn to_host(&self, stream: &Stream) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.len];
        self.copy_to_host(stream, &mut out)?;
        Ok(out)
    }

    /// A read-only view of the whole buffer, for a `&[T]` kernel parameter.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::<f32>::zeros(&stream, 8)?;
    /// assert_eq!(buf.view().len(), 8);
    /// # Ok(()) }
    /// ```
    pub fn view(&self) -> BufferView<'_> {
        BufferView::new(&self.core, T::SCALAR, 0, self.len)
    }

    /// A writable view of the whole buffer, for a `&mut [T]` kernel parameter.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let mut buf = kernel_runtime::Buffer::<f32>::zeros(&stream, 8)?;
    /// assert_eq!(buf.view_mut().len(), 8);
    /// # Ok(()) }
    /// ```
    pub fn view_mut(&mut self) -> BufferViewMut<'_> {
        BufferViewMut::new(&self.core, T::SCALAR, 0, self.len)
    }

    /// A writable view of no elements, typed `U`, at this buffer's start: the argument for a
    /// `&mut [U]` kernel parameter that the launch's other arguments tell the kernel never to
    /// touch (an optional output switched off by a flag). It covers no element, so a shared
    /// borrow of any buffer on the device is enough to make one.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::<u16>::zeros(&stream, 8)?;
    /// let unused = buf.unused_output::<f32>();
    /// assert_eq!((unused.len(), unused.elem()), (0, kernel_dsl::ScalarType::F32));
    /// # Ok(()) }
    /// ```
    pub fn unused_output<U: Element>(&self) -> BufferViewMut<'_> {
        BufferViewMut::new(&self.core, U::SCALAR, 0, 0)
    }

    /// A read-only view of the whole buffer's bytes as elements of `U`: for a kernel that
    /// reads a 16-bit buffer as `&[u32]` words, two elements a load, already packed the way
    /// a tensor-core operand holds them. The bytes must be a whole number of `U`s.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::<kernel_runtime::Bf16>::zeros(&stream, 8)?;
    /// let words = buf.view_as::<u32>()?;
    /// assert_eq!((words.len(), words.elem()), (4, kernel_dsl::ScalarType::U32));
    /// let odd = kernel_runtime::Buffer::<kernel_runtime::Bf16>::zeros(&stream, 3)?;
    /// assert!(odd.view_as::<u32>().is_err());
    /// # Ok(()) }
    /// ```
    pub fn view_as<U: Element>(&self) -> Result<BufferView<'_>> {
        let bytes = self.len * std::mem::size_of::<T>();
        let elem_bytes = std::mem::size_of::<U>();
        if !bytes.is_multiple_of(elem_bytes) {
            return Err(Error::ViewSize { bytes, elem_bytes });
        }
        Ok(BufferView::new(
            &self.core,
            U::SCALAR,
            0,
            bytes / elem_bytes,
        ))
    }

    /// A read-only view of `range` (in elements).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let buf = kernel_runtime::Buffer::<f32>::zeros(&stream, 8)?;
    /// assert_eq!(buf.slice(2..6)?.len(), 4);
    /// assert!(buf.slice(6..9).is_err());
    /// # Ok(()) }
    /// ```
    pub fn slice(&self, range: Range<usize>) -> Result<BufferView<'_>> {
        self.check_range(&range)?;
        let offset = range.start * std::mem::size_of::<T>();
        Ok(BufferView::new(&self.core, T::SCALAR, offset, range.len()))
    }

    /// A writable view of `range` (in elements).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let mut buf = kernel_runtime::Buffer::<f32>::zeros(&stream, 8)?;
    /// assert_eq!(buf.slice_mut(0..3)?.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn slice_mut(&mut self, range: Range<usize>) -> Result<BufferViewMut<'_>> {
        self.check_range(&range)?;
        let offset = range.start * std::mem::size_of::<T>();
        Ok(BufferViewMut::new(
            &self.core,
            T::SCALAR,
            offset,
            range.len(),
        ))
    }

    fn check_range(&self, range: &Range<usize>) -> Result<()> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::SliceRange {
                start: range.start,
                end: range.end,
                len: self.len,
            });
        }
        Ok(())
    }
}

impl<T: Element> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("elem", &T::SCALAR)
            .field("len", &self.len)
            .field("addr", &format_args!("{:#x}", self.core.addr))
            .finish()
    }
}
