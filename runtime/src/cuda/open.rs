//! Opening a CUDA device. The driver library is probed before the first driver call, because
//! cudarc's dynamic loader panics where no libcuda exists.

use crate::error::{Error, Result};
use crate::props::{DeviceKind, DeviceProps};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::CudaContext;
use kernel_dsl::Target;
use std::sync::Arc;

/// Opens device `ordinal` and reads its properties.
pub(crate) fn open(ordinal: usize) -> Result<(Arc<CudaContext>, DeviceProps)> {
    // SAFETY: probing tries to dlopen the driver library by its usual names and runs no code
    // from it.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoDriver {
            detail: "libcuda could not be loaded".into(),
        });
    }
    // SAFETY: the library is present (checked above); cuInit takes flags 0 and is safe to call
    // more than once.
    let init = unsafe { sys::cuInit(0) };
    if init == sys::CUresult::CUDA_ERROR_NO_DEVICE {
        return Err(Error::NoDevice { ordinal, count: 0 });
    }
    init.result().map_err(|e| Error::NoDriver {
        detail: format!("cuInit failed: {e:?}"),
    })?;
    let count = CudaContext::device_count().map_err(|e| Error::driver("cuDeviceGetCount", e))?;
    let count = count.max(0) as usize;
    if ordinal >= count {
        return Err(Error::NoDevice { ordinal, count });
    }
    let ctx =
        CudaContext::new(ordinal).map_err(|e| Error::driver("cuDevicePrimaryCtxRetain", e))?;
    // SAFETY: the runtime orders every use of a buffer itself: buffers are used on the stream
    // passed to each call, the first use on a foreign stream waits for the allocating stream,
    // and a buffer used on a foreign stream synchronizes the device before it is freed. Per-use
    // events would also break graph capture (waits on events recorded outside the capture).
    unsafe { ctx.disable_event_tracking() };
    // A pool that keeps nothing still works, only slower: warn rather than refuse the device.
    if ctx.has_async_alloc() {
        if let Err(e) = keep_freed_memory(&ctx) {
            tracing::warn!(
                target: "ptxkit::device",
                "the device's memory pool hands freed pages back to the driver ({e}); calls that allocate scratch will map fresh memory each time"
            );
        }
    }
    let props = read_props(&ctx, ordinal)?;
    Ok((ctx, props))
}

/// Lets the device's default memory pool keep what stream-ordered frees return, rather than
/// hand it back to the driver at every synchronization (its default threshold, 0): the
/// library allocates scratch (split-k and stream-K partials, transposed operands) per call, and
/// mapping fresh pages each time stalls the stream for longer than many kernels run. The
/// process keeps its peak scratch footprint until it exits, as a caching allocator does.
fn keep_freed_memory(ctx: &Arc<CudaContext>) -> Result<()> {
    let mut threshold = u64::MAX;
    // SAFETY: the device handle comes from a live context; the release threshold attribute
    // takes a pointer to a u64, which `threshold` is and outlives the call.
    unsafe {
        let pool = cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device())
            .map_err(|e| Error::driver("cuDeviceGetDefaultMemPool", e))?;
        cudarc::driver::result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .map_err(|e| Error::driver("cuMemPoolSetAttribute", e))
    }
}

fn read_props(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceProps> {
    let attr = |a: Attr| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
    };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| Error::driver("cuDeviceGetAttribute", e))?;
    let (major, minor) = (major.max(0) as u32, minor.max(0) as u32);
    let target = Target::from_compute_capability(major, minor).ok_or(
        Error::UnsupportedComputeCapability {
            ordinal,
            major,
            minor,
        },
    )?;
    Ok(DeviceProps {
        kind: DeviceKind::Cuda { ordinal },
        name: ctx
            .name()
            .map_err(|e| Error::driver("cuDeviceGetName", e))?,
        target,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dims: [
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dims: [
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        shared_bytes_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_bytes_per_block_optin: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?,
    })
}
