//! The CUDA backend: opening a device through cudarc, loading modules with the driver's JIT log,
//! and raw launches.

mod module;
mod open;
mod tensor_map;

pub(crate) use module::{launch, CudaKernel, CudaLoader, CudaModule, MAX_PARAMS};
pub(crate) use open::open;
pub(crate) use tensor_map::encode_tensor_map;
