//! Devices: a CUDA GPU through cudarc, or the CPU emulator, behind one type so the same code
//! runs on either.

use crate::cache::{Loaded, Loader, Miss, ModuleCache, ModuleInfo};
use crate::cuda::{self, CudaKernel, CudaLoader, CudaModule};
use crate::emulator::{default_engine, EmulatorOptions, Engine, ModuleId, SharedEngine};
use crate::error::{Error, Result};
use crate::props::{DeviceKind, DeviceProps};
use crate::select::{ModuleImage, Selected};
use crate::stream::Stream;
use cudarc::driver::CudaContext;
use kernel_dsl::{KernelArtifacts, Target};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Identifies a device within this process, to refuse mixing objects of two devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DeviceId(u64);

static NEXT_DEVICE: AtomicU64 = AtomicU64::new(1);

/// The target [`Device::emulator`] runs kernels as: the highest `sm_*` feature enabled on this
/// crate, which `ptxkit` forwards from a crate's own features (so a crate built with
/// `--features sm_89,sm_121` runs its embedded sm_121 PTX), else sm_80, the target a build
/// with no feature embeds. [`Device::emulator_for`] picks any other.
///
/// ```
/// let t = kernel_runtime::EMULATOR_DEFAULT_TARGET;
/// // This doc test is built without `sm_*` features.
/// assert_eq!(t, kernel_dsl::Target::DEFAULT_BUILD);
/// ```
pub const EMULATOR_DEFAULT_TARGET: Target = highest_enabled_target();

/// The highest target whose feature is enabled, by SM number (an `a` target above its plain
/// one), else [`Target::DEFAULT_BUILD`].
const fn highest_enabled_target() -> Target {
    if cfg!(feature = "sm_121") {
        Target::Sm121
    } else if cfg!(feature = "sm_120") {
        Target::Sm120
    } else if cfg!(feature = "sm_100a") {
        Target::Sm100a
    } else if cfg!(feature = "sm_100") {
        Target::Sm100
    } else if cfg!(feature = "sm_90a") {
        Target::Sm90a
    } else if cfg!(feature = "sm_90") {
        Target::Sm90
    } else if cfg!(feature = "sm_89") {
        Target::Sm89
    } else if cfg!(feature = "sm_86") {
        Target::Sm86
    } else if cfg!(feature = "sm_80") {
        Target::Sm80
    } else if cfg!(feature = "sm_75") {
        Target::Sm75
    } else if cfg!(feature = "sm_70") {
        Target::Sm70
    } else {
        Target::DEFAULT_BUILD
    }
}

/// A device kernels run on: a CUDA GPU or the CPU emulator. Cloning is cheap and shares the
/// module cache.
///
/// ```
/// use kernel_runtime::Device;
/// let device = Device::best(); // a GPU where one exists, else the emulator
/// println!("running on {} ({})", device.props().name, device.target());
/// ```
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

pub(crate) struct DeviceInner {
    pub id: DeviceId,
    pub props: DeviceProps,
    pub backend: Backend,
}

pub(crate) enum Backend {
    Cuda {
        ctx: Arc<CudaContext>,
        cache: ModuleCache<Arc<CudaModule>, CudaKernel>,
    },
    Emulator {
        engine: SharedEngine,
        cache: ModuleCache<ModuleId, ModuleId>,
    },
}

/// A kernel resolved on a device's backend.
pub(crate) enum KernelRef {
    Cuda(Arc<Loaded<CudaKernel>>),
    Emulator(Arc<Loaded<ModuleId>>),
}

impl Device {
    /// Opens CUDA device `ordinal`. Where no driver or no such device exists this returns an
    /// error (never panics). Buffers come from the device's stream-ordered memory pool, which
    /// this sets to keep the pages freed buffers return (as a caching allocator does), so the
    /// scratch that ops allocate per call costs no page mapping after the first; the process
    /// holds its peak footprint until it exits. (Where the driver refuses that setting, the
    /// device opens all the same and a warning is logged.)
    ///
    /// ```
    /// match kernel_runtime::Device::cuda(0) {
    ///     Ok(gpu) => println!("{} is {}", gpu.props().name, gpu.target()),
    ///     Err(e) => println!("no GPU: {e}"),
    /// }
    /// ```
    pub fn cuda(ordinal: usize) -> Result<Device> {
        let (ctx, props) = cuda::open(ordinal)?;
        let cache = ModuleCache::new(props.target, true);
        Ok(Device::from_parts(props, Backend::Cuda { ctx, cache }))
    }

    /// The CPU emulator, running kernels as [`EMULATOR_DEFAULT_TARGET`]: the highest target
    /// the build enabled, so that the embedded PTX runs (the device's name says which).
    ///
    /// ```
    /// let device = kernel_runtime::Device::emulator();
    /// assert_eq!(device.target(), kernel_runtime::EMULATOR_DEFAULT_TARGET);
    /// ```
    pub fn emulator() -> Device {
        Device::emulator_for(EMULATOR_DEFAULT_TARGET)
    }

    /// The CPU emulator, running kernels as `target` (modules must be for exactly this target,
    /// as on a GPU).
    ///
    /// ```
    /// let device = kernel_runtime::Device::emulator_for(kernel_dsl::Target::Sm90);
    /// assert_eq!(device.target(), kernel_dsl::Target::Sm90);
    /// ```
    pub fn emulator_for(target: Target) -> Device {
        Device::emulator_with(EmulatorOptions::new().target(target))
    }

    /// The CPU emulator with `options`: its target, its step budget (how many instructions
    /// a launch may run before an endless loop is reported as an error) and the SM count it
    /// reports.
    ///
    /// ```
    /// use kernel_runtime::{Device, EmulatorOptions};
    /// let device = Device::emulator_with(EmulatorOptions::new().step_budget(50_000_000_000));
    /// assert_eq!(device.target(), kernel_runtime::EMULATOR_DEFAULT_TARGET);
    /// ```
    pub fn emulator_with(options: EmulatorOptions) -> Device {
        let mut props = emulator_props(options.target);
        props.sm_count = options.sm_count;
        Device::emulator_from(props, default_engine(&options))
    }

    #[cfg(test)]
    pub(crate) fn emulator_with_engine(target: Target, engine: Box<dyn Engine>) -> Device {
        Device::emulator_from(emulator_props(target), engine)
    }

    fn emulator_from(props: DeviceProps, engine: Box<dyn Engine>) -> Device {
        let target = props.target;
        tracing::debug!(target: "ptxkit::load", "CPU emulator running kernels as {target}");
        let cache = ModuleCache::new(target, false);
        Device::from_parts(
            props,
            Backend::Emulator {
                engine: SharedEngine::new(engine),
                cache,
            },
        )
    }

    /// CUDA device 0 if a driver and a GPU exist, else the emulator; logs which it picked.
    ///
    /// ```
    /// let device = kernel_runtime::Device::best();
    /// assert!(device.props().max_threads_per_block > 0);
    /// ```
    pub fn best() -> Device {
        match Device::cuda(0) {
            Ok(device) => {
                tracing::info!(
                    "using CUDA device 0: {} ({})",
                    device.props().name,
                    device.target()
                );
                device
            }
            Err(e) => {
                tracing::info!("no usable CUDA device ({e}); using the CPU emulator");
                Device::emulator()
            }
        }
    }

    fn from_parts(props: DeviceProps, backend: Backend) -> Device {
        let id = DeviceId(NEXT_DEVICE.fetch_add(1, Ordering::Relaxed));
        Device {
            inner: Arc::new(DeviceInner { id, props, backend }),
        }
    }

    /// The device's identity and limits.
    ///
    /// ```
    /// assert!(kernel_runtime::Device::emulator().props().name.contains("emulator"));
    /// ```
    pub fn props(&self) -> &DeviceProps {
        &self.inner.props
    }

    /// The device's native target.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::Device::emulator().target().sm(), 80);
    /// ```
    pub fn target(&self) -> Target {
        self.inner.props.target
    }

    /// Loads every kernel in `kernels` now, while memory is free, and reports what was loaded.
    /// Launches resolve kernels through the same function, so each pre-warmed kernel is a
    /// cache hit at launch.
    ///
    /// ```no_run
    /// # use std::borrow::Cow;
    /// # use kernel_dsl::{BlockContract, KernelArtifacts, KernelMeta};
    /// # static VECTOR_ADD: KernelArtifacts = KernelArtifacts {
    /// #     meta: KernelMeta { entry: Cow::Borrowed("vector_add"), params: Cow::Borrowed(&[]),
    /// #         block: BlockContract::Any, static_shared_bytes: 0, uses_dynamic_shared: false, min_dynamic_shared_bytes: 0, waits_on_prior_grid: false, cluster: None },
    /// #     ptx: Cow::Borrowed(&[]), cubins: Cow::Borrowed(&[]), emit: None, ir: None };
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::best();
    /// device.prewarm(&[&VECTOR_ADD])?;
    /// device.seal(); // from here on, an unloaded kernel is an error, never a JIT
    /// # Ok(()) }
    /// ```
    pub fn prewarm(&self, kernels: &[&'static KernelArtifacts]) -> Result<Vec<ModuleInfo>> {
        kernels
            .iter()
            .map(|artifacts| Ok(self.kernel(artifacts, Miss::Prewarm)?.info()))
            .collect()
    }

    /// Seals the module cache: from now on, launching a kernel that was not loaded is
    /// [`Error::KernelNotPrewarmed`] instead of a load.
    ///
    /// ```
    /// let device = kernel_runtime::Device::emulator();
    /// device.seal();
    /// assert!(device.is_sealed());
    /// ```
    pub fn seal(&self) {
        match &self.inner.backend {
            Backend::Cuda { cache, .. } => cache.seal(),
            Backend::Emulator { cache, .. } => cache.seal(),
        }
    }

    /// Whether [`Device::seal`] was called.
    ///
    /// ```
    /// assert!(!kernel_runtime::Device::emulator().is_sealed());
    /// ```
    pub fn is_sealed(&self) -> bool {
        match &self.inner.backend {
            Backend::Cuda { cache, .. } => cache.is_sealed(),
            Backend::Emulator { cache, .. } => cache.is_sealed(),
        }
    }

    /// Every module loaded so far, sorted by kernel name.
    ///
    /// ```
    /// assert!(kernel_runtime::Device::emulator().loaded_modules().is_empty());
    /// ```
    pub fn loaded_modules(&self) -> Vec<ModuleInfo> {
        match &self.inner.backend {
            Backend::Cuda { cache, .. } => cache.loaded(),
            Backend::Emulator { cache, .. } => cache.loaded(),
        }
    }

    /// A new stream (non-blocking on CUDA; in-order and synchronous on the emulator).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn stream(&self) -> Result<Stream> {
        Stream::new(self)
    }

    /// Waits for all work on every stream of this device.
    ///
    /// ```
    /// kernel_runtime::Device::emulator().synchronize().unwrap();
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Cuda { ctx, .. } => ctx
                .synchronize()
                .map_err(|e| Error::driver("cuCtxSynchronize", e)),
            Backend::Emulator { .. } => Ok(()),
        }
    }

    /// Resolves `artifacts` to a loaded kernel: the one code path for pre-warm and launch.
    pub(crate) fn kernel(
        &self,
        artifacts: &'static KernelArtifacts,
        miss: Miss,
    ) -> Result<KernelRef> {
        match &self.inner.backend {
            Backend::Cuda { ctx, cache } => cache
                .kernel(artifacts, miss, &CudaLoader(ctx))
                .map(KernelRef::Cuda),
            Backend::Emulator { engine, cache } => cache
                .kernel(artifacts, miss, &EmuLoader(engine))
                .map(KernelRef::Emulator),
        }
    }
}

impl KernelRef {
    pub(crate) fn info(&self) -> ModuleInfo {
        match self {
            KernelRef::Cuda(k) => k.info.clone(),
            KernelRef::Emulator(k) => k.info.clone(),
        }
    }
}

/// Loads modules into the emulator engine: the cache's loader for emulator devices.
struct EmuLoader<'a>(&'a SharedEngine);

impl Loader for EmuLoader<'_> {
    type Module = ModuleId;
    type Kernel = ModuleId;

    fn load_module(&self, selected: &Selected, kernel: &str) -> Result<ModuleId> {
        let ModuleImage::Ptx(ptx) = &selected.image else {
            return Err(Error::EmulatorLoad {
                kernel: kernel.to_string(),
                detail: "the emulator runs PTX, not cubins".into(),
            });
        };
        self.0
            .lock()
            .load(ptx)
            .map_err(|detail| Error::EmulatorLoad {
                kernel: kernel.to_string(),
                detail,
            })
    }

    fn kernel(&self, module: &ModuleId, entry: &str) -> Result<ModuleId> {
        if !self.0.lock().entries(*module).iter().any(|e| e == entry) {
            return Err(Error::EntryNotFound {
                kernel: entry.to_string(),
            });
        }
        Ok(*module)
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("props", &self.inner.props)
            .finish()
    }
}

/// The emulator's nominal properties for `target`.
fn emulator_props(target: Target) -> DeviceProps {
    let name = format!("ptxkit CPU emulator ({target})");
    DeviceProps::nominal(DeviceKind::Emulator, name, target)
}
