//! The one error type of kernel-runtime. Every message says what went wrong and what to do.

use kernel_dsl::{BlockContract, ParamKind, Target};

/// Everything that can go wrong between a kernel's artifacts and a finished launch.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("no CUDA driver found ({detail}): install the NVIDIA driver, or run on the CPU with `Device::emulator()`")]
    NoDriver { detail: String },
    #[error("no CUDA device with ordinal {ordinal}: this machine has {count}; pick an ordinal below {count}")]
    NoDevice { ordinal: usize, count: usize },
    #[error("device {ordinal} has compute capability {major}.{minor}, which ptxkit has no target for: use a device of sm_70..sm_121")]
    UnsupportedComputeCapability {
        ordinal: usize,
        major: u32,
        minor: u32,
    },
    #[error("invalid tensor map: {detail}")]
    TensorMap { detail: String },
    #[error("kernel `{kernel}` takes `{param}` as a tensor map of {want_elem} in {want_rank} dimensions, but was given one of {elem} in {rank}: encode the map over a buffer of that type with that many extents")]
    TensorMapParam {
        kernel: String,
        param: String,
        want_elem: kernel_dsl::ScalarType,
        want_rank: usize,
        elem: kernel_dsl::ScalarType,
        rank: usize,
    },
    #[error("CUDA driver call `{call}` failed: {code}")]
    Driver { call: &'static str, code: String },
    #[error("kernel `{kernel}` has no module for {target} (it was built for {}) and cannot emit one: enable the `{}` feature", list_targets(.embedded), .target.feature())]
    NoModuleForTarget {
        kernel: String,
        target: Target,
        embedded: Vec<Target>,
    },
    #[error("kernel `{kernel}` cannot run on this {device} device: it uses `{instruction}`, which needs {need}; run it on a GPU that has it, or on the CPU with `Device::emulator()`")]
    BeyondDevice {
        kernel: String,
        device: Target,
        /// The first instruction the device lacks.
        instruction: String,
        /// What that instruction needs, from the instruction catalog.
        need: String,
    },
    #[error("kernel `{kernel}` could not be emitted for {target}: {source}")]
    Emit {
        kernel: String,
        target: Target,
        source: kernel_dsl::Error,
    },
    #[error("refusing to load kernel `{kernel}`: {source}")]
    Parity {
        kernel: String,
        source: kernel_dsl::Error,
    },
    #[error("refusing to load kernel `{kernel}`: the cubin embedded for {target} {detail}; rebuild it with `ptxas -arch={target}`")]
    CubinTarget {
        kernel: String,
        target: Target,
        detail: String,
    },
    #[error("the driver could not load kernel `{kernel}` for {target} ({code}); its JIT log says:\n{log}")]
    JitFailed {
        kernel: String,
        target: Target,
        code: String,
        log: String,
    },
    #[error("the module for kernel `{kernel}` has no `.entry {kernel}`: the artifacts' metadata and PTX disagree; rebuild the kernel")]
    EntryNotFound { kernel: String },
    #[error("kernel `{kernel}` for {target} was not pre-warmed, and the runtime is sealed (or capturing a graph), so it will not compile it now: add it to `Device::prewarm` before `seal()`")]
    KernelNotPrewarmed { kernel: String, target: Target },
    #[error("cannot pre-warm kernel `{kernel}` for {target}: the runtime is already sealed, so nothing loads any more; pre-warm every kernel the program needs before calling `seal()`")]
    PrewarmAfterSeal { kernel: String, target: Target },
    #[error("kernel `{kernel}` has no instance {requested}; it was built for {available}: add it to the kernel's `instances(...)`, or pick one of those")]
    NoInstance {
        kernel: &'static str,
        requested: String,
        available: &'static str,
    },
    #[error("kernel `{kernel}` takes {expected} arguments but the launch passed {got}")]
    ArgCount {
        kernel: String,
        expected: usize,
        got: usize,
    },
    #[error("argument {index} (`{param}`) of kernel `{kernel}` must be {}, but the launch passed {}", describe(.expected), describe(.got))]
    ArgKind {
        kernel: String,
        index: usize,
        param: String,
        expected: ParamKind,
        got: ParamKind,
    },
    #[error("argument {index} (`{param}`) of kernel `{kernel}` is written by the kernel (`&mut [{}]`): pass a mutable buffer (`&mut buf`), not a shared view", .elem.ptx())]
    NeedsMutableBuffer {
        kernel: String,
        index: usize,
        param: String,
        elem: kernel_dsl::ScalarType,
    },
    #[error("argument {index} of kernel `{kernel}` is a buffer on another device: allocate it on the launching stream's device")]
    BufferOnOtherDevice { kernel: String, index: usize },
    #[error("kernel `{kernel}` launched with an empty grid {grid:?} or block {block:?}: every dimension must be at least 1")]
    ZeroSizedLaunch {
        kernel: String,
        grid: [u32; 3],
        block: [u32; 3],
    },
    #[error("kernel `{kernel}` requires blocks of {contract:?}, but the launch uses {block:?}: launch with a block the kernel was built for")]
    BlockContract {
        kernel: String,
        block: [u32; 3],
        contract: BlockContract,
    },
    #[error("block {block:?} for kernel `{kernel}` exceeds the device limit ({max_threads} threads per block, dimensions at most {max_dims:?}): use a smaller block")]
    BlockTooLarge {
        kernel: String,
        block: [u32; 3],
        max_threads: u32,
        max_dims: [u32; 3],
    },
    #[error("grid {grid:?} for kernel `{kernel}` exceeds the device limit {max:?}: split the work over several launches or a 2-D grid")]
    GridTooLarge {
        kernel: String,
        grid: [u32; 3],
        max: [u32; 3],
    },
    #[error("kernel `{kernel}` needs {static_bytes} bytes of static plus {dynamic_bytes} bytes of dynamic shared memory, more than the device's {limit} bytes per block: request less dynamic shared memory")]
    SharedMemory {
        kernel: String,
        static_bytes: u32,
        dynamic_bytes: u32,
        limit: u32,
    },
    #[error("kernel `{kernel}` declares no dynamic shared memory, but the launch asks for {bytes} bytes: set `dynamic_shared_bytes` to 0")]
    DynamicSharedNotDeclared { kernel: String, bytes: u32 },
    #[error("kernel `{kernel}` uses dynamic shared memory (`dynamic_shared`, an `.extern .shared` array), but the launch gives it 0 bytes: set `LaunchConfig::dynamic_shared_bytes` (`cfg.with_dynamic_shared(bytes)`) to the bytes the kernel indexes")]
    DynamicSharedMissing { kernel: String },
    #[error("kernel `{kernel}` indexes at least {min} bytes of dynamic shared memory (its `dynamic_shared` declarations say so), but the launch gives it {bytes}: set `LaunchConfig::dynamic_shared_bytes` to {min} or more")]
    DynamicSharedTooSmall {
        kernel: String,
        bytes: u32,
        min: u32,
    },
    #[error("kernel `{kernel}` runs in thread-block clusters of {cluster:?} blocks (`#[kernel(cluster = ..)]`), but the grid {grid:?} is not a whole number of clusters in every dimension: make each grid dimension a multiple of the cluster's")]
    ClusterGrid {
        kernel: String,
        grid: [u32; 3],
        cluster: [u32; 3],
    },
    #[error("kernel `{kernel}` has {count} parameters; the launcher handles at most {max}: pack parameters into a buffer")]
    TooManyParams {
        kernel: String,
        count: usize,
        max: usize,
    },
    #[error("copy of {host_len} elements does not match the buffer's {buffer_len}: pass a host slice of exactly the buffer's length")]
    CopyLength { buffer_len: usize, host_len: usize },
    #[error("device copy of {src_len} elements into a buffer of {dst_len}: copy between buffers of equal length (slice a kernel view for part of one)")]
    DeviceCopyLength { dst_len: usize, src_len: usize },
    #[error("a buffer of {len} elements of {elem_bytes} bytes does not fit in the address space: allocate less")]
    AllocationTooLarge { len: usize, elem_bytes: usize },
    #[error("range {start}..{end} is outside a buffer of {len} elements")]
    SliceRange {
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("a buffer of {bytes} bytes is not a whole number of {elem_bytes}-byte elements: view it as a type whose size divides the buffer's bytes")]
    ViewSize { bytes: usize, elem_bytes: usize },
    #[error("`{op}` cannot run while the stream is capturing a graph: do it before `capture` or after it returns")]
    NotAllowedDuringCapture { op: &'static str },
    #[error("{streams} stream(s) forked into the capture still had work that was never joined back: call `join` on the capturing stream for each `fork` after the forked stream's last launch")]
    UnjoinedFork { streams: usize },
    #[error("a stream cannot fork or join itself: pass a second stream of the same device")]
    ForkOfItself,
    #[error("`{op}` mixes objects of two devices: use streams, buffers, events and graphs of one device together")]
    DeviceMismatch { op: &'static str },
    #[error("event was never recorded: call `stream.record(&event)` before asking for its time")]
    EventNotRecorded,
    #[error("the NCCL library could not be loaded (searched {searched}): install it with `pip install nvidia-nccl-cu12` and add its `nvidia/nccl/lib` folder to `LD_LIBRARY_PATH`, or install the distro package (`apt install libnccl2`)")]
    NcclMissing { searched: String },
    #[error("NCCL call `{call}` failed: {code}")]
    Nccl { call: &'static str, code: String },
    #[error("`{op}` on a communicator of {world} ranks needs {expected} elements in `{buffer}` but it has {got}")]
    CollectiveLength {
        op: &'static str,
        buffer: &'static str,
        world: usize,
        expected: usize,
        got: usize,
    },
    #[error("rank {rank} is outside a communicator of {world} ranks: use a rank below {world}")]
    CollectiveRank { rank: usize, world: usize },
    #[error("the CPU emulator supports communicators of one rank, not {world}: run several ranks on CUDA devices")]
    EmulatorWorld { world: usize },
    #[error("`{op}` did not finish within {timeout_ms} ms, so the communicator was aborted: a peer rank has likely died or hung; check the other ranks' output")]
    CollectiveTimeout { op: &'static str, timeout_ms: u64 },
    #[error("the communicator was aborted after an earlier error or timeout: create a new one")]
    CommunicatorAborted,
    #[error("invalid NCCL unique id: {detail}; pass the id rank 0 wrote, unchanged")]
    InvalidUniqueId { detail: String },
    #[error("the CPU emulator failed while running kernel `{kernel}`: {detail}")]
    Emulator { kernel: String, detail: String },
    #[error("the CPU emulator could not load kernel `{kernel}`: {detail}")]
    EmulatorLoad { kernel: String, detail: String },
}

impl Error {
    pub(crate) fn driver(call: &'static str, err: cudarc::driver::DriverError) -> Error {
        Error::Driver {
            call,
            code: format!("{err:?}"),
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a parameter kind reads in a message: `u32`, `&[f32]`, `&mut [bf16]`.
pub(crate) fn describe(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Scalar(t) => format!("a `{}` scalar", t.ptx()),
        ParamKind::Slice {
            elem,
            mutable: false,
        } => format!("`&[{}]`", elem.ptx()),
        ParamKind::Slice {
            elem,
            mutable: true,
        } => format!("`&mut [{}]`", elem.ptx()),
        ParamKind::TensorMap => "a `&TensorMap`".into(),
    }
}

fn list_targets(ts: &[Target]) -> String {
    if ts.is_empty() {
        return "no target".into();
    }
    ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
}
