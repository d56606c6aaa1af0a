//! The per-device module cache. Pre-warm and launch both resolve a kernel through
//! [`ModuleCache::kernel`], so the key a kernel is pre-warmed under is the key it is launched
//! under: [`select`] derives it from the module's content and target, never from a string
//! someone formatted.

use crate::error::{Error, Result};
use crate::select::{select, ModuleOrigin, Selected};
use kernel_dsl::{KernelArtifacts, ModuleKey, Target};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A module a device has loaded, as reported by [`Device::prewarm`](crate::Device::prewarm).
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// # let device = kernel_runtime::Device::emulator();
/// let loaded = device.loaded_modules();
/// assert!(loaded.is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    pub kernel: String,
    pub key: ModuleKey,
    /// The target the module was loaded as (an `a` variant where only that exists).
    pub target: Target,
    pub origin: ModuleOrigin,
}

/// Whether a cache miss may load a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// A launch: loads unless sealed (then `KernelNotPrewarmed`).
    Load,
    /// A pre-warm: loads unless sealed (then `PrewarmAfterSeal`).
    Prewarm,
    /// Capturing a graph: a miss is `KernelNotPrewarmed`.
    Refuse,
}

/// A loaded kernel: the backend's handle plus what was loaded.
pub(crate) struct Loaded<K> {
    pub info: ModuleInfo,
    pub handle: K,
}

/// How a backend loads modules and finds entries in them. `M` is a loaded module (shared by
/// every kernel in it), `K` a kernel.
pub(crate) trait Loader {
    type Module: Clone;
    type Kernel;
    fn load_module(&self, selected: &Selected, kernel: &str) -> Result<Self::Module>;
    fn kernel(&self, module: &Self::Module, entry: &str) -> Result<Self::Kernel>;
}

struct State<M, K> {
    modules: HashMap<ModuleKey, M>,
    kernels: HashMap<(ModuleKey, String), Arc<Loaded<K>>>,
    /// Memo from a `'static` artifacts address to its resolved kernel, so a warm launch does not
    /// re-hash the module. Addresses of statics are unique for the program's life.
    by_artifacts: HashMap<usize, Arc<Loaded<K>>>,
    sealed: bool,
}

pub(crate) struct ModuleCache<M, K> {
    target: Target,
    runs_cubins: bool,
    state: Mutex<State<M, K>>,
}

impl<M: Clone, K> ModuleCache<M, K> {
    pub(crate) fn new(target: Target, runs_cubins: bool) -> ModuleCache<M, K> {
        ModuleCache {
            target,
            runs_cubins,
            state: Mutex::new(State {
                modules: HashMap::new(),
                kernels: HashMap::new(),
                by_artifacts: HashMap::new(),
                sealed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<M, K>> {
        // A panic while holding the lock leaves the maps consistent (inserts are atomic), so a
        // poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kernel for `artifacts` on this device, loading its module with `loader` on a miss
    /// unless `miss` (or the sealed flag) refuses. Looking an entry up in an already loaded
    /// module is not a load and is allowed when sealed.
    pub(crate) fn kernel<L: Loader<Module = M, Kernel = K>>(
        &self,
        artifacts: &'static KernelArtifacts,
        miss: Miss,
        loader: &L,
    ) -> Result<Arc<Loaded<K>>> {
        let addr = artifacts as *const KernelArtifacts as usize;
        let mut state = self.lock();
        if let Some(hit) = state.by_artifacts.get(&addr) {
            return Ok(hit.clone());
        }
        let entry = artifacts.meta.entry.as_ref();
        let selected = select(artifacts, self.target, self.runs_cubins)?;
        let kernel_key = (selected.key, entry.to_string());
        if let Some(hit) = state.kernels.get(&kernel_key).cloned() {
            state.by_artifacts.insert(addr, hit.clone());
            return Ok(hit);
        }
        let module = match state.modules.get(&selected.key) {
            Some(module) => module.clone(),
            None if miss == Miss::Prewarm && state.sealed => {
                return Err(Error::PrewarmAfterSeal {
                    kernel: entry.to_string(),
                    target: selected.target,
                })
            }
            None if miss == Miss::Refuse || state.sealed => {
                return Err(Error::KernelNotPrewarmed {
                    kernel: entry.to_string(),
                    target: selected.target,
                })
            }
            None => {
                let _load = tracing::debug_span!(
                    target: "ptxkit::load",
                    "load",
                    kernel = entry,
                    target = %selected.target,
                    origin = ?selected.origin,
                    hash = format_args!("{:016x}", selected.key.content_hash),
                )
                .entered();
                let module = loader.load_module(&selected, entry)?;
                tracing::debug!(target: "ptxkit::load", "module loaded");
                state.modules.insert(selected.key, module.clone());
                module
            }
        };
        let handle = loader.kernel(&module, entry)?;
        let info = ModuleInfo {
            kernel: entry.to_string(),
            key: selected.key,
            target: selected.target,
            origin: selected.origin,
        };
        let loaded = Arc::new(Loaded { info, handle });
        state.kernels.insert(kernel_key, loaded.clone());
        state.by_artifacts.insert(addr, loaded.clone());
        Ok(loaded)
    }

    pub(crate) fn seal(&self) {
        self.lock().sealed = true;
    }

    pub(crate) fn is_sealed(&self) -> bool {
        self.lock().sealed
    }

    pub(crate) fn loaded(&self) -> Vec<ModuleInfo> {
        let mut infos: Vec<ModuleInfo> = self
            .lock()
            .kernels
            .values()
            .map(|l| l.info.clone())
            .collect();
        infos.sort_by(|a, b| (&a.kernel, a.key).cmp(&(&b.kernel, b.key)));
        infos
    }
}
