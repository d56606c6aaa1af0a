//! The seam between the runtime and the PTX executor. The runtime talks to an [`Engine`]; the
//! default engine is backed by the `ptx-emulator` crate.

use super::memory::HostMemory;
use crate::config::LaunchConfig;

/// An index into an engine's loaded modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ModuleId(pub usize);

/// One `.param` value as the emulator receives it (mirrors `ptx_emulator::ArgValue`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum EmuArg {
    U16(u16),
    U32(u32),
    S32(i32),
    U64(u64),
    S64(i64),
    F32(f32),
    F64(f64),
    Ptr(u64),
}

/// What the runtime needs from a PTX executor.
pub(crate) trait Engine: Send {
    fn load(&mut self, ptx: &str) -> Result<ModuleId, String>;
    fn entries(&self, module: ModuleId) -> Vec<String>;
    fn launch(
        &mut self,
        module: ModuleId,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[EmuArg],
    ) -> Result<(), String>;
    fn alloc(&mut self, bytes: usize) -> u64;
    fn free(&mut self, addr: u64);
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String>;
}

/// The engine `Device::emulator()` uses.
pub(crate) fn default_engine() -> Box<dyn Engine> {
    Box::new(PendingEngine::default())
}

/// Holds memory but executes nothing, until the `ptx-emulator` crate exposes its executor.
#[derive(Default)]
struct PendingEngine {
    memory: HostMemory,
}

const PENDING: &str = "the ptx-emulator crate does not execute PTX yet";

impl Engine for PendingEngine {
    fn load(&mut self, _ptx: &str) -> Result<ModuleId, String> {
        Err(PENDING.into())
    }
    fn entries(&self, _module: ModuleId) -> Vec<String> {
        Vec::new()
    }
    fn launch(
        &mut self,
        _: ModuleId,
        _: &str,
        _: &LaunchConfig,
        _: &[EmuArg],
    ) -> Result<(), String> {
        Err(PENDING.into())
    }
    fn alloc(&mut self, bytes: usize) -> u64 {
        self.memory.alloc(bytes)
    }
    fn free(&mut self, addr: u64) {
        self.memory.free(addr)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.memory.write(addr, data)
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.memory.read(addr, out)
    }
}
