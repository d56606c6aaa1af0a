//! The one error type of ptx-emulator.

/// Where in a launch something went wrong: the kernel, the CTA, the thread and the instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The `.entry` name.
    pub kernel: String,
    /// `%ctaid` of the CTA.
    pub block: [u32; 3],
    /// `%tid` of the thread.
    pub thread: [u32; 3],
    /// The instruction as PTX text.
    pub instruction: String,
    /// The Rust source line the instruction came from, where the PTX carries line info.
    pub source: Option<Box<SourceLine>>,
}

/// Where in Rust an instruction came from: `src/kernels.rs:14:9`, then the expression's text
/// where the PTX gave it (`src/kernels.rs:14:9, `y[i]``). Boxed in [`Site`], which every
/// error carries, to keep errors small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine(pub String);

impl SourceLine {
    /// The line as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// ` (from src/kernels.rs:14:9)` for a known line, else nothing.
fn from_line(line: &Option<Box<SourceLine>>) -> String {
    line.as_ref()
        .map(|l| format!(" (from {l})"))
        .unwrap_or_default()
}

impl std::fmt::Display for SourceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(
            f,
            "kernel `{}`, block ({bx}, {by}, {bz}), thread ({tx}, {ty}, {tz}), at `{}`",
            self.kernel, self.instruction
        )?;
        match &self.source {
            Some(source) => write!(f, " from {source}"),
            None => Ok(()),
        }
    }
}

/// Everything the emulator can report: bad input to its API and the faults a GPU would not
/// tell you about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("the PTX does not parse: {0}")]
    Parse(#[from] ptx_parser::Error),

    #[error("the PTX module has no `.entry {name}`; it defines: {available}")]
    NoSuchEntry { name: String, available: String },

    #[error("kernel `{kernel}` uses `{instruction}`, which the emulator does not support{detail}\n  help: run this kernel on a GPU, or rewrite it without `{opcode}`")]
    Unsupported {
        kernel: String,
        opcode: String,
        instruction: String,
        detail: String,
    },

    #[error("kernel `{kernel}` is malformed at `{instruction}`: {detail}")]
    Malformed {
        kernel: String,
        instruction: String,
        detail: String,
    },

    #[error("kernel `{kernel}` takes {expected} parameters but the launch passed {given}\n  help: pass one argument per `.param`, in declaration order")]
    ArgumentCount {
        kernel: String,
        expected: usize,
        given: usize,
    },

    #[error("parameter {index} (`{param}`) of kernel `{kernel}` is {expected} bytes, but the argument is {given} bytes\n  help: pass an argument of the parameter's type (pointers as ArgValue::Ptr, arrays such as a tensor map as ArgValue::Bytes)")]
    ArgumentSize {
        kernel: String,
        index: usize,
        param: String,
        expected: usize,
        given: usize,
    },

    #[error("launch of `{kernel}` has an invalid shape: {detail}")]
    LaunchShape { kernel: String, detail: String },

    #[error("out-of-bounds {access} of {size} bytes at global address {address:#x} ({site}); {nearest}\n  help: check the index arithmetic and the bounds guard of this access")]
    GlobalOutOfBounds {
        site: Box<Site>,
        access: Access,
        address: u64,
        size: u32,
        nearest: Nearest,
    },

    #[error("out-of-bounds {access} of {size} bytes at global address {address:#x} ({site}): outside {view}\n  help: a kernel given a view of a buffer may touch only the view's range; check the index arithmetic and bounds guard, or pass a view (or the buffer) that covers the access")]
    ViewOutOfBounds {
        site: Box<Site>,
        access: Access,
        address: u64,
        size: u32,
        /// Boxed: it is the largest payload, and errors travel through every decode result.
        view: Box<ViewBounds>,
    },

    #[error("out-of-bounds {access} of {size} bytes at shared address {address:#x} ({site}); the CTA has {shared_bytes} bytes of shared memory{symbol}\n  help: check the index arithmetic, or pass more dynamic shared memory")]
    SharedOutOfBounds {
        site: Box<Site>,
        access: Access,
        address: u64,
        size: u32,
        shared_bytes: u32,
        symbol: String,
    },

    #[error("out-of-bounds {access} of {size} bytes at local address {address:#x} ({site}); each thread has {local_bytes} bytes of local memory")]
    LocalOutOfBounds {
        site: Box<Site>,
        access: Access,
        address: u64,
        size: u32,
        local_bytes: u32,
    },

    #[error("misaligned {access} of {size} bytes at address {address:#x} ({site})\n  help: accesses must be aligned to their size")]
    Misaligned {
        site: Box<Site>,
        access: Access,
        address: u64,
        size: u32,
    },

    #[error("read of shared memory at {address:#x}{symbol} that no thread wrote in this launch ({site})\n  help: a missing store, a missing `bar.sync`, or a missing `cp.async.wait_group` before this load")]
    UninitializedShared {
        site: Box<Site>,
        address: u64,
        symbol: String,
    },

    #[error("shared-memory race: {access} of {address:#x}{symbol} ({site}) reads a byte thread ({}, {}, {}) of another warp stored since the last barrier\n  help: put a `bar.sync` between the store and this load", other[0], other[1], other[2])]
    SharedRace {
        site: Box<Site>,
        access: Access,
        address: u64,
        symbol: String,
        /// `%tid` of the thread whose store conflicts.
        other: [u32; 3],
    },

    #[error("`bar.sync` divergence in kernel `{kernel}`, block ({}, {}, {}): {waiting} threads wait at `{instruction}`{} for {expected}, but {detail}\n  help: make every thread of the CTA reach the barrier (no early `ret` or divergent branch around it)", block[0], block[1], block[2], from_line(.origin))]
    BarrierDivergence {
        kernel: String,
        block: [u32; 3],
        instruction: String,
        /// The Rust line of the barrier, where the PTX carries line info.
        origin: Option<Box<SourceLine>>,
        waiting: u32,
        expected: u32,
        detail: String,
    },

    #[error("warp-collective divergence ({site}): {detail}\n  help: every lane in the member mask must execute the same collective instruction")]
    CollectiveDivergence { site: Box<Site>, detail: String },

    #[error("member mask {mask:#010x} names {} of warp {warp}, which the block does not have ({site}): the block's last warp has only {lanes} lanes, and a GPU leaves a warp collective over missing lanes undefined\n  help: use a member mask of the lanes present ({:#010x}), or a block size that is a multiple of 32", missing_lanes(*.mask, *.lanes), present_lanes(*.lanes))]
    PartialWarpMask {
        site: Box<Site>,
        /// Index of the warp in the block.
        warp: u32,
        /// The member mask as the instruction gave it.
        mask: u32,
        /// How many lanes the warp has.
        lanes: u32,
    },

    #[error("lane {lane} shuffles from lane {from}, which {} ({site}): a GPU returns an undefined value\n  help: keep every source lane inside the member mask ({members:#010x}): narrow the lane offset or the `c` clamp operand, or widen the mask to the lanes the shuffle reads", if *.present { "is not in the member mask" } else { "the block's last, partial warp does not have" })]
    ShuffleSource {
        site: Box<Site>,
        /// The reading lane.
        lane: u32,
        /// The lane it reads.
        from: u32,
        /// The lanes taking part in the shuffle.
        members: u32,
        /// Whether the source lane exists (false: the block's last warp is partial).
        present: bool,
    },

    #[error("deadlock: {waiting} threads spin at a wait that no thread of the grid will satisfy ({site}); {detail}\n  help: at an mbarrier wait, check the barrier's arrival count and expected transaction bytes, and that every producer arrives; at a `nanosleep` polling a flag, check that some block sets it and does not itself wait on a block that cannot start; at `barrier.cluster.wait`, check that every thread of every block of the cluster arrives (or exits)")]
    SpinDeadlock {
        site: Box<Site>,
        waiting: u32,
        detail: String,
    },

    #[error("`cp.async.bulk.tensor` cannot run ({site}): {detail}\n  help: pass a map built with TensorMap::encode (ArgValue::from(map)) whose check() passes, and a 128-byte-aligned shared destination")]
    TensorCopy { site: Box<Site>, detail: String },

    #[error("thread-block cluster access fails ({site}): {detail}\n  help: map addresses with `mapa` to a rank below %cluster_nctarank, and end with `barrier.cluster` arrive and wait so that no CTA exits while others still use its shared memory")]
    Cluster { site: Box<Site>, detail: String },

    #[error("`trap` executed ({site})")]
    Trap { site: Box<Site> },

    #[error("kernel `{}` ran past its step budget of {budget} instructions in one launch, summed over all its threads; stopped at {site}. It probably loops forever\n  help: if the kernel is just long, raise the budget: Emulator::with_step_budget, the runtime's EmulatorOptions::step_budget, or the PTXKIT_EMULATOR_STEP_BUDGET environment variable (a count of instructions)", .site.kernel)]
    StepBudget { site: Box<Site>, budget: u64 },

    #[error("PTXKIT_EMULATOR_STEP_BUDGET is `{value}`, which is not a count of instructions\n  help: set it to a positive whole number such as 50000000000 (underscores allowed), or unset it for the default")]
    StepBudgetVariable { value: String },

    #[error("{operation} at {address:#x}, which is not the start of an allocation\n  help: pass an address returned by GlobalMemory::alloc")]
    NotAnAllocation {
        operation: &'static str,
        address: u64,
    },

    #[error("host {operation} of {size} bytes at {address:#x} is out of bounds; {nearest}")]
    HostOutOfBounds {
        operation: &'static str,
        address: u64,
        size: usize,
        nearest: Nearest,
    },
}

/// The mask of lanes `0..lanes`.
fn present_lanes(lanes: u32) -> u32 {
    if lanes >= 32 {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    }
}

/// "lanes 16-31" (or "lanes 3, 17-20") for the lanes of `mask` at or above `lanes`.
fn missing_lanes(mask: u32, lanes: u32) -> String {
    let missing = mask & !present_lanes(lanes);
    let mut runs: Vec<String> = Vec::new();
    let mut l = 0;
    while l < 32 {
        if missing & (1 << l) == 0 {
            l += 1;
            continue;
        }
        let start = l;
        while l < 32 && missing & (1 << l) != 0 {
            l += 1;
        }
        runs.push(if l - 1 == start {
            start.to_string()
        } else {
            format!("{start}-{}", l - 1)
        });
    }
    let noun = if missing.count_ones() == 1 {
        "lane"
    } else {
        "lanes"
    };
    format!("{noun} {}", runs.join(", "))
}

/// The view an access fell outside of: a pointer argument to part of a buffer, which bounds
/// the kernel's accesses to that buffer for the launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewBounds {
    /// What the caller called the view ([`crate::ViewArg::name`]).
    pub name: String,
    /// Index of the kernel parameter it was passed as.
    pub index: usize,
    /// That parameter's PTX name.
    pub param: String,
    /// The view's byte range within its buffer.
    pub start: u64,
    pub end: u64,
    /// Element size, for naming the range in elements.
    pub elem_bytes: u32,
    /// Base address and size of the buffer the view is part of.
    pub buffer: u64,
    pub buffer_bytes: u64,
    /// `address - buffer` of the faulting access (negative before the buffer).
    pub offset: i64,
}

impl std::fmt::Display for ViewBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.elem_bytes.max(1) as u64;
        write!(
            f,
            "view `{}` (elements {}..{}, bytes {}..{}) passed as parameter {} (`{}`), part of the buffer at {:#x} ({} bytes, {} elements); the access is at byte offset {} of that buffer",
            self.name,
            self.start / e,
            self.end / e,
            self.start,
            self.end,
            self.index,
            self.param,
            self.buffer,
            self.buffer_bytes,
            self.buffer_bytes / e,
            self.offset
        )
    }
}

/// The kind of memory access that faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Load,
    Store,
    Atomic,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic",
        })
    }
}

/// The allocation an out-of-bounds address belonged to, or was nearest to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nearest {
    /// No allocation exists at all.
    Nothing,
    /// The access starts inside the buffer but runs past its end, or lies just before or after
    /// it.
    Buffer {
        /// Base address of the buffer.
        base: u64,
        /// Its size in bytes.
        bytes: u64,
        /// `address - base` (negative before the buffer).
        offset: i64,
    },
}

impl std::fmt::Display for Nearest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Nearest::Nothing => f.write_str("no buffer is allocated"),
            Nearest::Buffer { base, bytes, offset } => write!(
                f,
                "nearest buffer is {base:#x} ({bytes} bytes), the access is at byte offset {offset} of it"
            ),
        }
    }
}
