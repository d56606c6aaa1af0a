//! The public entry points: [`Emulator`] loads PTX into a [`Module`], whose kernels launch over
//! a grid against a [`GlobalMemory`].

use crate::decode::{decode_kernel, module_globals};
use crate::error::Error;
use crate::memory::GlobalMemory;
use crate::program::Kernel;
use ptx_parser::FunctionKind;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many instructions one launch may run, summed over all its threads, before it is stopped
/// as a runaway loop: 2^33, about 8.6 billion. The largest launch in the emulator tests runs
/// about 41 million (a 513-block column sum), so a real kernel has 200 times that; and at the
/// interpreter's 10 to 25 million instructions a second in a debug build (about ten times that
/// in release) an endless loop stops within minutes instead of never. Per launch rather than
/// per thread, so the wait is bounded whatever the grid.
pub const DEFAULT_STEP_BUDGET: u64 = 1 << 33;

/// The environment variable that sets the step budget of emulators not given one explicitly.
pub const STEP_BUDGET_ENV: &str = "PTXKIT_EMULATOR_STEP_BUDGET";

/// Gives every loaded module its own copy of its `.global` variables in a [`GlobalMemory`].
static NEXT_MODULE_ID: AtomicU64 = AtomicU64::new(1);

/// Loads PTX for execution on the CPU.
///
/// ```
/// let emu = ptx_emulator::Emulator::new();
/// let module = emu.load(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n").unwrap();
/// assert_eq!(module.entries(), vec!["k".to_string()]);
/// ```
#[derive(Debug, Clone)]
pub struct Emulator {
    options: Options,
}

/// Run-time checks and limits, fixed when a module is loaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    /// Instructions one launch may run in all; `None`: [`STEP_BUDGET_ENV`], else
    /// [`DEFAULT_STEP_BUDGET`], read at each launch.
    pub step_budget: Option<u64>,
    /// Report reads of shared memory nothing wrote in this launch.
    pub check_shared_init: bool,
    /// Report shared-memory accesses racing with another warp's store.
    pub check_races: bool,
}

impl Default for Emulator {
    fn default() -> Emulator {
        Emulator::new()
    }
}

impl Emulator {
    /// An emulator with default options.
    ///
    /// ```
    /// let _emu = ptx_emulator::Emulator::new();
    /// ```
    pub fn new() -> Emulator {
        Emulator {
            options: Options {
                step_budget: None,
                check_shared_init: true,
                check_races: true,
            },
        }
    }

    /// Stops a launch once its threads have run `budget` instructions in all (counted at
    /// branches, so a loop is caught on its way round), as [`Error::StepBudget`]: a kernel that
    /// loops forever becomes an error instead of a hang. The budget is per launch, not per
    /// thread, so that it bounds the time a launch can take whatever its grid. Without this,
    /// the budget is [`STEP_BUDGET_ENV`] where set, else [`DEFAULT_STEP_BUDGET`].
    ///
    /// ```
    /// let emu = ptx_emulator::Emulator::new().with_step_budget(1_000_000);
    /// # let _ = emu;
    /// ```
    pub fn with_step_budget(mut self, budget: u64) -> Emulator {
        self.options.step_budget = Some(budget);
        self
    }

    /// Whether reading shared memory that nothing wrote in this launch is an error (the
    /// default). Turn it off for kernels that knowingly read and discard such bytes, e.g. the
    /// padding of a vector load.
    ///
    /// ```
    /// let emu = ptx_emulator::Emulator::new().with_shared_init_check(false);
    /// # let _ = emu;
    /// ```
    pub fn with_shared_init_check(mut self, on: bool) -> Emulator {
        self.options.check_shared_init = on;
        self
    }

    /// Whether reading shared memory that another warp stored since the last synchronisation (a
    /// barrier opening or an mbarrier phase completing) is an error: the read-after-write race a
    /// missing `bar.sync` causes, which the emulator's one-warp-at-a-time order would otherwise
    /// hide. On by default; turn it off for
    /// kernels that synchronise warps through flags in memory.
    ///
    /// ```
    /// let emu = ptx_emulator::Emulator::new().with_race_check(false);
    /// # let _ = emu;
    /// ```
    pub fn with_race_check(mut self, on: bool) -> Emulator {
        self.options.check_races = on;
        self
    }

    /// Parses PTX text and pre-decodes every `.entry` for fast execution.
    ///
    /// ```
    /// let err = ptx_emulator::Emulator::new().load(".version 7.8\n.target\n").unwrap_err();
    /// assert!(matches!(err, ptx_emulator::Error::Parse(_)));
    /// ```
    pub fn load(&self, ptx: &str) -> Result<Module, Error> {
        let ast = ptx_parser::parse_module(ptx)?;
        let mut kernels = Vec::new();
        for f in ast.functions() {
            if f.kind == FunctionKind::Entry && f.body.is_some() {
                // A kernel the emulator cannot run does not stop the others from loading; its
                // launch reports why.
                kernels.push((f.name.clone(), decode_kernel(&ast, f)));
            }
        }
        Ok(Module {
            kernels,
            globals: module_globals(&ast)?,
            id: NEXT_MODULE_ID.fetch_add(1, Ordering::Relaxed),
            options: self.options,
        })
    }
}

/// A parsed and decoded PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    kernels: Vec<(String, Result<Kernel, Error>)>,
    /// Module `.global` variables and their initial bytes.
    globals: Vec<(String, Vec<u8>)>,
    id: u64,
    options: Options,
}

/// Grid and block shape of a launch, and the dynamic shared memory per CTA.
///
/// ```
/// let cfg = ptx_emulator::LaunchConfig { grid: [4, 1, 1], block: [128, 1, 1], dynamic_shared_bytes: 0 };
/// assert_eq!(cfg.grid[0] * cfg.block[0], 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `grid` blocks of `block` threads with no dynamic shared memory.
    ///
    /// ```
    /// let cfg = ptx_emulator::LaunchConfig::linear(8, 256);
    /// assert_eq!(cfg.block, [256, 1, 1]);
    /// ```
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: 0,
        }
    }
}

/// One kernel argument; pointers are addresses from [`GlobalMemory::alloc`].
///
/// ```
/// use ptx_emulator::ArgValue;
/// assert_eq!(ArgValue::F32(1.0).to_bytes(), 1.0f32.to_le_bytes().to_vec());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    U32(u32),
    S32(i32),
    U64(u64),
    S64(i64),
    F32(f32),
    F64(f64),
    U16(u16),
    Ptr(u64),
    /// The raw bytes of an array parameter passed by value, such as a tensor map
    /// (`.param .align 64 .b8 tmap[128]`); their count must match the declaration.
    Bytes(Vec<u8>),
    /// A pointer to part of a buffer, which bounds the launch's accesses to that buffer.
    View(ViewArg),
}

/// A pointer argument to part of a buffer (what `Buffer::slice` hands a kernel): for the
/// launch, accesses to that buffer must fall inside `[addr, addr + bytes)`, or inside another
/// view of it passed to the same launch, and are reported as [`Error::ViewOutOfBounds`]
/// otherwise. A view of the whole buffer, or a plain [`ArgValue::Ptr`] into it, lifts the
/// bounds. Pointers carry no provenance, so a view bounds every pointer into its buffer, not
/// only its own parameter.
///
/// ```
/// use ptx_emulator::{ArgValue, GlobalMemory, ViewArg};
/// let mut mem = GlobalMemory::new();
/// let y = mem.alloc(64);
/// let first_half = ArgValue::View(ViewArg { addr: y, bytes: 32, elem_bytes: 4, name: "y".into() });
/// assert_eq!(first_half.to_bytes(), y.to_le_bytes().to_vec());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewArg {
    /// The first byte of the view: the pointer the kernel receives.
    pub addr: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its element size, for naming ranges in elements in errors.
    pub elem_bytes: u32,
    /// How errors name it (a parameter name, `x[8..16]`, ...).
    pub name: String,
}

/// A tensor map passes as its 128 encoded bytes.
///
/// ```
/// use ptx_emulator::{ArgValue, TensorMap, TensorSwizzle};
/// let map = TensorMap {
///     elem_bytes: 4,
///     rank: 1,
///     address: 0x1000,
///     dims: [64, 1, 1, 1, 1],
///     strides: [4, 0, 0, 0, 0],
///     boxes: [16, 1, 1, 1, 1],
///     swizzle: TensorSwizzle::None,
/// };
/// assert_eq!(ArgValue::from(map), ArgValue::Bytes(map.encode().to_vec()));
/// ```
impl From<crate::TensorMap> for ArgValue {
    fn from(map: crate::TensorMap) -> ArgValue {
        ArgValue::Bytes(map.encode().to_vec())
    }
}

impl ArgValue {
    /// The little-endian bytes of the value.
    ///
    /// ```
    /// assert_eq!(ptx_emulator::ArgValue::U16(0x0102).to_bytes(), vec![2, 1]);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        match *self {
            ArgValue::Bytes(ref bytes) => bytes.clone(),
            ArgValue::U32(v) => v.to_le_bytes().to_vec(),
            ArgValue::S32(v) => v.to_le_bytes().to_vec(),
            ArgValue::U64(v) | ArgValue::Ptr(v) => v.to_le_bytes().to_vec(),
            ArgValue::View(ref v) => v.addr.to_le_bytes().to_vec(),
            ArgValue::S64(v) => v.to_le_bytes().to_vec(),
            ArgValue::F32(v) => v.to_le_bytes().to_vec(),
            ArgValue::F64(v) => v.to_le_bytes().to_vec(),
            ArgValue::U16(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// What a launch did.
///
/// ```
/// let stats = ptx_emulator::LaunchStats { thread_instructions: 10 };
/// assert_eq!(stats.thread_instructions, 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaunchStats {
    /// Instructions executed, summed over all threads (guarded-off instructions included).
    pub thread_instructions: u64,
}

impl Module {
    /// The names of the module's `.entry` kernels, in source order.
    ///
    /// ```
    /// let m = ptx_emulator::Emulator::new()
    ///     .load(".version 7.8\n.target sm_80\n.address_size 64\n.entry a()\n{\n\tret;\n}\n.entry b()\n{\n\tret;\n}\n")
    ///     .unwrap();
    /// assert_eq!(m.entries(), vec!["a".to_string(), "b".to_string()]);
    /// ```
    pub fn entries(&self) -> Vec<String> {
        self.kernels.iter().map(|(name, _)| name.clone()).collect()
    }

    /// Checks that `entry` exists and can be emulated (every instruction is supported).
    ///
    /// ```
    /// let m = ptx_emulator::Emulator::new()
    ///     .load(".version 7.8\n.target sm_80\n.address_size 64\n.entry a()\n{\n\tbrkpt;\n}\n")
    ///     .unwrap();
    /// assert!(matches!(m.check("a"), Err(ptx_emulator::Error::Unsupported { .. })));
    /// ```
    pub fn check(&self, entry: &str) -> Result<(), Error> {
        self.kernel(entry).map(|_| ())
    }

    fn kernel(&self, entry: &str) -> Result<&Kernel, Error> {
        let (_, decoded) = self
            .kernels
            .iter()
            .find(|(name, _)| name == entry)
            .ok_or_else(|| Error::NoSuchEntry {
                name: entry.to_string(),
                available: self.entries().join(", "),
            })?;
        decoded.as_ref().map_err(Clone::clone)
    }

    /// Runs `entry` over the grid. Each argument is one `.param`, in declaration order.
    ///
    /// ```
    /// use ptx_emulator::{ArgValue, Emulator, GlobalMemory, LaunchConfig};
    /// let ptx = r#"
    /// .version 7.8
    /// .target sm_80
    /// .address_size 64
    /// .visible .entry fill(.param .u64 out, .param .u32 v)
    /// {
    ///     .reg .b32 %r<3>;
    ///     .reg .b64 %rd<4>;
    ///     ld.param.u64 %rd1, [out];
    ///     ld.param.u32 %r1, [v];
    ///     mov.u32 %r2, %tid.x;
    ///     mul.wide.u32 %rd2, %r2, 4;
    ///     add.s64 %rd3, %rd1, %rd2;
    ///     st.global.u32 [%rd3], %r1;
    ///     ret;
    /// }
    /// "#;
    /// let module = Emulator::new().load(ptx).unwrap();
    /// let mut mem = GlobalMemory::new();
    /// let out = mem.alloc(4 * 8);
    /// let cfg = LaunchConfig::linear(1, 8);
    /// module.launch("fill", &cfg, &[ArgValue::Ptr(out), ArgValue::U32(7)], &mut mem).unwrap();
    /// assert_eq!(mem.read_u32(out, 8).unwrap(), vec![7; 8]);
    /// ```
    pub fn launch(
        &self,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[ArgValue],
        mem: &mut GlobalMemory,
    ) -> Result<LaunchStats, Error> {
        let kernel = self.kernel(entry)?;
        if args.len() != kernel.params.len() {
            return Err(Error::ArgumentCount {
                kernel: kernel.name.clone(),
                expected: kernel.params.len(),
                given: args.len(),
            });
        }
        let mut params = vec![0u8; kernel.param_bytes as usize];
        for (index, (p, arg)) in kernel.params.iter().zip(args).enumerate() {
            let bytes = arg.to_bytes();
            if bytes.len() != p.bytes as usize {
                return Err(Error::ArgumentSize {
                    kernel: kernel.name.clone(),
                    index,
                    param: p.name.clone(),
                    expected: p.bytes as usize,
                    given: bytes.len(),
                });
            }
            params[p.offset as usize..p.offset as usize + bytes.len()].copy_from_slice(&bytes);
        }
        let mut links = Vec::with_capacity(kernel.links.len());
        for (slot, name) in &kernel.links {
            let init = self
                .globals
                .iter()
                .find(|(n, _)| n == name)
                .map_or(&[][..], |(_, b)| &b[..]);
            links.push((*slot, mem.module_variable(self.id, name, init)));
        }
        for (index, (p, arg)) in kernel.params.iter().zip(args).enumerate() {
            match arg {
                ArgValue::View(view) => mem.bound_view(view, index, &p.name),
                ArgValue::Ptr(addr) => mem.open_buffer(*addr),
                // A tensor map bounds its copies by its own extents, and may cover a whole
                // buffer that the launch also passes a view of.
                ArgValue::Bytes(bytes) => {
                    let map = <&[u8; 128]>::try_from(&bytes[..])
                        .ok()
                        .and_then(|b| crate::TensorMap::decode(b).ok());
                    if let Some(map) = map {
                        mem.open_buffer(map.address);
                    }
                }
                _ => {}
            }
        }
        let budget = match self.options.step_budget {
            Some(budget) => budget,
            None => step_budget_from(std::env::var(STEP_BUDGET_ENV).ok().as_deref())?,
        };
        let executed = crate::exec::launch(kernel, cfg, &params, &links, mem, self.options, budget);
        // Views bound this launch only.
        mem.clear_views();
        let executed = executed?;
        Ok(LaunchStats {
            thread_instructions: executed,
        })
    }
}

/// The step budget an environment value asks for: a count of instructions (`_` allowed as a
/// separator), or the default where the variable is unset.
fn step_budget_from(value: Option<&str>) -> Result<u64, Error> {
    let Some(value) = value else {
        return Ok(DEFAULT_STEP_BUDGET);
    };
    value
        .trim()
        .replace('_', "")
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| Error::StepBudgetVariable {
            value: value.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_budget_variable_takes_a_positive_count_or_is_an_error() {
        assert_eq!(step_budget_from(None).unwrap(), DEFAULT_STEP_BUDGET);
        assert_eq!(
            step_budget_from(Some("50_000_000_000")).unwrap(),
            50_000_000_000
        );
        assert_eq!(step_budget_from(Some(" 1000 ")).unwrap(), 1000);
        for bad in ["", "0", "-5", "1e9", "lots"] {
            let err = step_budget_from(Some(bad)).unwrap_err();
            assert!(
                matches!(&err, Error::StepBudgetVariable { value } if value == bad),
                "{bad}: {err:?}"
            );
            assert!(err.to_string().contains(STEP_BUDGET_ENV), "{err}");
        }
    }
}
