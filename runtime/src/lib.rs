//! Loads ptxkit kernels on CUDA devices (through cudarc) or the CPU emulator, caches their
//! modules, and launches them with arguments checked against each kernel's metadata.
//!
//! The pieces, in the order a launch meets them: a [`Device`] (CUDA or emulator, see
//! `device.rs`) owns a module cache (`cache.rs`); [`Device::prewarm`] and every launch resolve
//! a kernel through the same selection (`select.rs`: the exact target's cubin, else its PTX,
//! else the `a` variant's, else PTX emitted for the exact target, else an error naming the
//! feature to enable; every PTX passes the target-parity check first, and every cubin's ELF
//! header must name the target it is filed under, `cubin.rs`). A [`Stream`] queues
//! copies of typed [`Buffer`]s and launches; [`Stream::launch`] validates arguments and shape
//! (`validate.rs`) before anything reaches a driver. [`Stream::capture`] records launches into
//! a [`Graph`]; [`GraphCache`] keeps one graph per shape. [`Event`]s time work.
//!
//! ```
//! use kernel_runtime::{Buffer, Device};
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let device = Device::best();
//! let stream = device.stream()?;
//! let x = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
//! assert_eq!(x.to_host(&stream)?, vec![1.0, 2.0, 3.0]);
//! # Ok(()) }
//! ```
//!
//! # No JIT mid-step
//!
//! Load every kernel up front with [`Device::prewarm`], then call [`Device::seal`]: from then
//! on, launching a kernel that is not loaded is [`Error::KernelNotPrewarmed`], never a
//! compile. Inside [`Stream::capture`] this holds whether or not the device is sealed.
//!
//! # Calling convention for generated launchers
//!
//! `#[kernel]` emits, next to each kernel, a `static` holding its
//! [`KernelArtifacts`](kernel_dsl::KernelArtifacts) and a launcher that forwards to
//! [`Stream::launch`]. For a kernel
//! `fn axpy(a: f32, x: &[f32], y: &mut [f32], n: u32)` the launcher is:
//!
//! ```ignore
//! pub static AXPY: ::kernel_dsl::KernelArtifacts = /* meta, ptx per target, cubins, emit */;
//!
//! pub fn axpy(
//!     stream: &::kernel_runtime::Stream,
//!     cfg: ::kernel_runtime::LaunchConfig,
//!     a: f32,
//!     x: &::kernel_runtime::Buffer<f32>,
//!     y: &mut ::kernel_runtime::Buffer<f32>,
//!     n: u32,
//! ) -> ::core::result::Result<(), ::kernel_runtime::Error> {
//!     stream.launch(
//!         &AXPY,
//!         cfg,
//!         &[
//!             ::kernel_runtime::KernelArg::from(a),
//!             ::kernel_runtime::KernelArg::from(x),
//!             ::kernel_runtime::KernelArg::from(&mut *y),
//!             ::kernel_runtime::KernelArg::from(n),
//!         ],
//!     )
//! }
//! ```
//!
//! The rules:
//! - The artifacts are a `static` (not a `const`): the runtime memoizes resolved kernels by the
//!   artifacts' address, and needs `&'static KernelArtifacts`.
//! - Arguments go in declaration order, one [`KernelArg`] per parameter, built with
//!   `KernelArg::from`: a scalar value of the parameter's Rust type (`f32`, `u32`, `i64`,
//!   [`F16`], [`Bf16`], ...); `&Buffer<T>` for `&[T]`; `&mut Buffer<T>` (reborrowed as
//!   `&mut *y`) for `&mut [T]`. A [`BufferView`] / [`BufferViewMut`] from
//!   [`Buffer::slice`] / [`Buffer::slice_mut`] also converts. `#[kernel]`'s launchers take
//!   either through [`SliceArg`] / [`SliceArgMut`], so an op can launch on a range of a buffer.
//! - `KernelMeta::params` lists the same parameters in the same order with
//!   `ParamKind::Scalar(ty)` or `ParamKind::Slice { elem, mutable }`; the runtime checks each
//!   argument against it and returns a typed error on any mismatch.
//! - Launchers return the runtime's [`Error`] unchanged; buffer-length checks belong in typed
//!   op wrappers, which know how lengths relate to the problem size.

mod arg;
mod buffer;
mod cache;
mod collective;
mod config;
mod cubin;
mod cuda;
mod device;
mod element;
mod emulator;
mod error;
mod event;
mod graph;
mod props;
mod select;
mod stream;
mod tensor_map;
mod tensor_map_cache;
mod validate;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

pub use arg::{BufferView, BufferViewMut, KernelArg, ScalarValue, SliceArg, SliceArgMut};
pub use buffer::Buffer;
pub use cache::ModuleInfo;
pub use collective::{
    nccl_available, CollectiveElem, Communicator, ReduceOp, UniqueId, NCCL_ID_ENV,
};
pub use config::LaunchConfig;
pub use device::{Device, EMULATOR_DEFAULT_TARGET};
pub use element::{Bf16, Element, F16};
pub use emulator::EmulatorOptions;
pub use error::{Error, Result};
pub use event::Event;
pub use graph::{Graph, GraphCache};
pub use props::{DeviceKind, DeviceProps};
pub use select::ModuleOrigin;
pub use stream::Stream;
pub use tensor_map::{TensorMap, TensorSwizzle, TensorTiling, TENSOR_BOX_MAX, TENSOR_MAP_MAX_RANK};
