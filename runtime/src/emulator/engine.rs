//! The seam between the runtime and the PTX executor. The runtime talks to an [`Engine`]; the
//! default engine is the `ptx-emulator` crate, and unit tests substitute a mock.

use crate::config::LaunchConfig;

/// An index into an engine's loaded modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ModuleId(pub usize);

/// One `.param` value as the emulator receives it (mirrors `ptx_emulator::ArgValue`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum EmuArg {
    U16(u16),
    U32(u32),
    S32(i32),
    U64(u64),
    S64(i64),
    F32(f32),
    F64(f64),
    Ptr(u64),
    /// A tensor map in the emulator's encoding.
    TensorMap([u8; kernel_dsl::TENSOR_MAP_BYTES as usize]),
    /// A buffer or a view of part of one, which the emulator bounds-checks as its own buffer.
    View(EmuView),
}

/// A slice argument: the address the kernel receives and the range it may touch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EmuView {
    pub addr: u64,
    pub bytes: u64,
    pub elem_bytes: u32,
    /// The kernel parameter's name, for errors.
    pub name: String,
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

/// The engine `Device::emulator()` uses: the `ptx-emulator` crate.
pub(crate) fn default_engine(options: &super::EmulatorOptions) -> Box<dyn Engine> {
    let mut emulator = ptx_emulator::Emulator::new();
    if let Some(budget) = options.step_budget {
        emulator = emulator.with_step_budget(budget);
    }
    Box::new(PtxEngine {
        emulator,
        modules: Vec::new(),
        memory: ptx_emulator::GlobalMemory::new(),
    })
}

/// Runs PTX with `ptx_emulator`; buffers live in its `GlobalMemory`, so out-of-bounds accesses
/// are reported with the buffer they missed.
struct PtxEngine {
    emulator: ptx_emulator::Emulator,
    modules: Vec<ptx_emulator::Module>,
    memory: ptx_emulator::GlobalMemory,
}

impl Engine for PtxEngine {
    fn load(&mut self, ptx: &str) -> Result<ModuleId, String> {
        let module = self.emulator.load(ptx).map_err(|e| e.to_string())?;
        self.modules.push(module);
        Ok(ModuleId(self.modules.len() - 1))
    }

    fn entries(&self, module: ModuleId) -> Vec<String> {
        self.modules
            .get(module.0)
            .map(|m| m.entries())
            .unwrap_or_default()
    }

    fn launch(
        &mut self,
        module: ModuleId,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[EmuArg],
    ) -> Result<(), String> {
        let module = self
            .modules
            .get(module.0)
            .ok_or("the module was never loaded")?;
        let cfg = ptx_emulator::LaunchConfig {
            grid: cfg.grid,
            block: cfg.block,
            dynamic_shared_bytes: cfg.dynamic_shared_bytes,
        };
        let args: Vec<ptx_emulator::ArgValue> = args.iter().map(arg_value).collect();
        module
            .launch(entry, &cfg, &args, &mut self.memory)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn alloc(&mut self, bytes: usize) -> u64 {
        self.memory.alloc(bytes)
    }

    fn free(&mut self, addr: u64) {
        // Freeing happens on drop, where an error cannot be returned; the only failure is a
        // double free, which the buffer's ownership rules out.
        let _ = self.memory.free(addr);
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.memory.write(addr, data).map_err(|e| e.to_string())
    }

    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.memory.read(addr, out).map_err(|e| e.to_string())
    }
}

fn arg_value(arg: &EmuArg) -> ptx_emulator::ArgValue {
    use ptx_emulator::ArgValue as A;
    match *arg {
        EmuArg::U16(v) => A::U16(v),
        EmuArg::U32(v) => A::U32(v),
        EmuArg::S32(v) => A::S32(v),
        EmuArg::U64(v) => A::U64(v),
        EmuArg::S64(v) => A::S64(v),
        EmuArg::F32(v) => A::F32(v),
        EmuArg::F64(v) => A::F64(v),
        EmuArg::Ptr(v) => A::Ptr(v),
        EmuArg::TensorMap(bytes) => A::Bytes(bytes.to_vec()),
        EmuArg::View(ref v) => A::View(ptx_emulator::ViewArg {
            addr: v.addr,
            bytes: v.bytes,
            elem_bytes: v.elem_bytes,
            name: v.name.clone(),
        }),
    }
}
