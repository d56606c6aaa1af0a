//! The emulator backend: PTX runs on the CPU through an [`Engine`]. Buffers live in the
//! engine's host-side "global memory"; streams execute in order, synchronously.

mod engine;
#[cfg(test)]
mod memory;
mod options;
mod tensor_map;

pub(crate) use engine::{default_engine, EmuArg, EmuView, Engine, ModuleId};
#[cfg(test)]
pub(crate) use memory::HostMemory;
pub use options::EmulatorOptions;
pub(crate) use tensor_map::encode_tensor_map;

use std::sync::{Arc, Mutex, MutexGuard};

/// The engine of one emulator device, shared by its streams and buffers.
#[derive(Clone)]
pub(crate) struct SharedEngine(Arc<Mutex<Box<dyn Engine>>>);

impl SharedEngine {
    pub(crate) fn new(engine: Box<dyn Engine>) -> SharedEngine {
        SharedEngine(Arc::new(Mutex::new(engine)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Box<dyn Engine>> {
        // The engine's state stays consistent across a panic in a kernel (each buffer write is
        // whole), so a poisoned lock is still usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A buffer's handle on emulator memory, used to free it on drop.
pub(crate) struct EmuMemory(pub(crate) SharedEngine);

impl EmuMemory {
    pub(crate) fn free(&self, addr: u64) {
        self.0.lock().free(addr);
    }
}
