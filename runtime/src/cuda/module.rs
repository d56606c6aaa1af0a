//! Loading a module with `cuModuleLoadDataEx` (so a failed JIT returns the driver's log) and
//! launching its entry with `cuLaunchKernel`.

use crate::cache::Loader;
use crate::config::LaunchConfig;
use crate::error::{Error, Result};
use crate::select::{ModuleImage, Selected};
use cudarc::driver::sys::{
    self, CUfunction_attribute, CUjit_option, CUlaunchAttribute, CUlaunchAttributeID,
    CUlaunchAttributeValue, CUlaunchConfig,
};
use cudarc::driver::{CudaContext, CudaStream};
use kernel_dsl::Target;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Kernels take at most this many parameters (each in one 64-bit slot on the launcher's stack).
pub(crate) const MAX_PARAMS: usize = 64;

const LOG_BYTES: usize = 16 * 1024;

/// A loaded module; unloaded when the last kernel of it is dropped.
pub(crate) struct CudaModule {
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
}

/// One entry of a loaded module.
pub(crate) struct CudaKernel {
    module: Arc<CudaModule>,
    function: sys::CUfunction,
    /// The dynamic shared memory the function is opted in to (0: the 48 KiB default).
    dynamic_optin: AtomicU32,
}

// SAFETY: module and function handles are plain driver handles; the driver API is thread-safe
// for them, and the runtime binds the owning context before each use.
unsafe impl Send for CudaModule {}
// SAFETY: as above; a module is never mutated after loading.
unsafe impl Sync for CudaModule {}
// SAFETY: as for `CudaModule`.
unsafe impl Send for CudaKernel {}
// SAFETY: as above; the only mutable state is an atomic.
unsafe impl Sync for CudaKernel {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: the module was loaded by `CudaModule::load` and is unloaded exactly once.
        let unloaded = unsafe { sys::cuModuleUnload(self.module) }.result();
        self.ctx.record_err(unloaded);
    }
}

/// Loads modules into one context: the cache's loader for CUDA devices.
pub(crate) struct CudaLoader<'a>(pub &'a Arc<CudaContext>);

impl Loader for CudaLoader<'_> {
    type Module = Arc<CudaModule>;
    type Kernel = CudaKernel;

    fn load_module(&self, selected: &Selected, kernel: &str) -> Result<Arc<CudaModule>> {
        CudaModule::load(self.0, &selected.image, kernel, selected.target).map(Arc::new)
    }

    fn kernel(&self, module: &Arc<CudaModule>, entry: &str) -> Result<CudaKernel> {
        let missing = || Error::EntryNotFound {
            kernel: entry.to_string(),
        };
        let name = CString::new(entry).map_err(|_| missing())?;
        module
            .ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` is loaded and alive; `name` is NUL-terminated.
        let found =
            unsafe { sys::cuModuleGetFunction(&mut function, module.module, name.as_ptr()) };
        if found != sys::CUresult::CUDA_SUCCESS {
            return Err(missing());
        }
        Ok(CudaKernel {
            module: module.clone(),
            function,
            dynamic_optin: AtomicU32::new(0),
        })
    }
}

impl CudaModule {
    /// Loads `image`. A failed load carries the JIT error log and the kernel's name.
    fn load(
        ctx: &Arc<CudaContext>,
        image: &ModuleImage,
        kernel: &str,
        target: Target,
    ) -> Result<CudaModule> {
        // A PTX image is JIT-compiled by the driver here; a cubin is loaded as it is.
        let _span = match image {
            ModuleImage::Cubin(bytes) => tracing::debug_span!(
                target: "ptxkit::load",
                "cubin",
                kernel,
                target = %target,
                bytes = bytes.len()
            ),
            ModuleImage::Ptx(text) => tracing::debug_span!(
                target: "ptxkit::jit",
                "jit",
                kernel,
                target = %target,
                bytes = text.len()
            ),
        }
        .entered();
        ctx.bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let ptx_text;
        let data: *const c_void = match image {
            ModuleImage::Cubin(bytes) => bytes.as_ptr().cast(),
            ModuleImage::Ptx(text) => {
                ptx_text = CString::new(text.as_bytes()).map_err(|_| Error::JitFailed {
                    kernel: kernel.to_string(),
                    target,
                    code: "invalid PTX".into(),
                    log: "the PTX text holds a NUL byte".into(),
                })?;
                ptx_text.as_ptr().cast()
            }
        };
        let mut log = vec![0u8; LOG_BYTES];
        let (mut options, mut values) = jit_options(image, &mut log);
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `data` points to a NUL-terminated PTX string or a cubin image that outlives the
        // call; the option arrays have the length passed; the log buffer has LOG_BYTES bytes.
        let loaded = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                data,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if loaded != sys::CUresult::CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
            return Err(Error::JitFailed {
                kernel: kernel.to_string(),
                target,
                code: format!("{loaded:?}"),
                log: if text.is_empty() {
                    "(the driver wrote no log)".into()
                } else {
                    text
                },
            });
        }
        Ok(CudaModule {
            ctx: ctx.clone(),
            module,
        })
    }
}

/// The JIT options of a load: the error log always, and for PTX that carries `.loc`
/// directives, `CU_JIT_GENERATE_LINE_INFO`, so compute-sanitizer and Nsight Compute show the
/// kernel's Rust lines (a cubin carries them already where ptxas was given `-lineinfo`).
fn jit_options(image: &ModuleImage, log: &mut [u8]) -> (Vec<CUjit_option>, Vec<*mut c_void>) {
    let mut options = vec![
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // An option's value is passed in the pointer itself, as the driver API specifies.
    let mut values: Vec<*mut c_void> = vec![log.as_mut_ptr().cast(), log.len() as *mut c_void];
    if let ModuleImage::Ptx(text) = image {
        if kernel_dsl::source_map::has_line_info(text) {
            options.push(CUjit_option::CU_JIT_GENERATE_LINE_INFO);
            values.push(std::ptr::without_provenance_mut(1));
        }
    }
    (options, values)
}

impl CudaKernel {
    /// Opts the function in to `bytes` of dynamic shared memory where the launch needs more
    /// than the 48 KiB default.
    fn ensure_dynamic_shared(&self, static_bytes: u32, bytes: u32) -> Result<()> {
        if static_bytes + bytes <= 48 * 1024 || self.dynamic_optin.load(Ordering::Acquire) >= bytes
        {
            return Ok(());
        }
        // SAFETY: `function` belongs to the live module held by `self`.
        unsafe {
            sys::cuFuncSetAttribute(
                self.function,
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        }
        .result()
        .map_err(|e| Error::driver("cuFuncSetAttribute", e))?;
        self.dynamic_optin.fetch_max(bytes, Ordering::AcqRel);
        Ok(())
    }
}

/// Launches `kernel` on `stream` with one pointer to each parameter's bytes. With `early`
/// (the kernel waits for the grid before it, and the device is sm_90 or newer) the launch
/// allows programmatic stream serialization: the kernel's blocks may start, and run up to
/// their `griddepcontrol.wait`, while the kernel before it on the stream finishes.
///
/// A kernel with a cluster shape carries it in its code (`.reqnctapercluster`), which the
/// driver applies to every launch, plain or extended; giving it again as a launch attribute
/// is not needed (and a compile-time shape may not be changed at launch), so none is passed.
/// The grid was checked to be whole clusters before this.
pub(crate) fn launch(
    kernel: &CudaKernel,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    static_shared: u32,
    params: &mut [*mut c_void],
    early: bool,
) -> Result<()> {
    kernel
        .module
        .ctx
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    kernel.ensure_dynamic_shared(static_shared, cfg.dynamic_shared_bytes)?;
    let [gx, gy, gz] = cfg.grid;
    let [bx, by, bz] = cfg.block;
    if early {
        let mut attrs = [CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value: CUlaunchAttributeValue {
                programmaticStreamSerializationAllowed: 1,
            },
        }];
        let config = CUlaunchConfig {
            gridDimX: gx,
            gridDimY: gy,
            gridDimZ: gz,
            blockDimX: bx,
            blockDimY: by,
            blockDimZ: bz,
            sharedMemBytes: cfg.dynamic_shared_bytes,
            hStream: stream.cu_stream(),
            attrs: attrs.as_mut_ptr(),
            numAttrs: attrs.len() as u32,
        };
        // SAFETY: as for `cuLaunchKernel` below; `config` and the attribute array it points to
        // live until the call returns (the driver copies them).
        return unsafe {
            sys::cuLaunchKernelEx(
                &config,
                kernel.function,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|e| Error::driver("cuLaunchKernelEx", e));
    }
    // SAFETY: the launch was validated against the kernel's metadata: one pointer per
    // parameter, each to at least as many bytes as its parameter (64-bit little-endian slots,
    // or a tensor map's 128 bytes), buffer slots holding addresses of live allocations on this
    // device; the pointees outlive the call (the driver copies them).
    unsafe {
        sys::cuLaunchKernel(
            kernel.function,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            cfg.dynamic_shared_bytes,
            stream.cu_stream(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(|e| Error::driver("cuLaunchKernel", e))
}
