//! Streams: ordered queues of copies and launches, and graph capture.

use crate::arg::KernelArg;
use crate::buffer::{BufferCore, Storage};
use crate::cache::Miss;
use crate::config::LaunchConfig;
use crate::cuda::{self, MAX_PARAMS};
use crate::device::{Backend, Device, KernelRef};
use crate::emulator::{EmuArg, EmuMemory, EmuView};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::graph::{EmuOp, Graph, KeptAlive};
use crate::validate::validate;
use cudarc::driver::sys::CUstreamCaptureMode;
use cudarc::driver::{result as cu, CudaStream, DevicePtr};
use kernel_dsl::{KernelArtifacts, ParamKind, ParamMeta};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Identifies a stream within this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct StreamId(u64);

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// An ordered queue of work on one device. On CUDA it is a non-blocking stream; on the
/// emulator, work runs in order as it is queued.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let device = kernel_runtime::Device::emulator();
/// let stream = device.stream()?;
/// let buf = kernel_runtime::Buffer::from_host(&stream, &[1.0f32; 4])?;
/// stream.synchronize()?;
/// # drop(buf); Ok(()) }
/// ```
pub struct Stream {
    device: Device,
    pub(crate) id: StreamId,
    pub(crate) cuda: Option<Arc<CudaStream>>,
    capturing: Arc<AtomicBool>,
    capture: Mutex<Capture>,
}

/// Where a capturing stream records: its own log when it began the capture, its origin's
/// when it was forked into one ([`Stream::fork`]).
#[derive(Default)]
struct Capture {
    log: Arc<Mutex<CaptureLog>>,
    /// The stream that began the capture, for a forked stream.
    origin: Option<StreamId>,
}

#[derive(Default)]
struct CaptureLog {
    keepalive: Vec<KeptAlive>,
    ops: Vec<EmuOp>,
    launches: usize,
    /// Streams forked into this capture, each with whether it has work not yet joined back.
    forks: Vec<Fork>,
    /// The fork and join events: graph edges while capturing, dropped once it ends.
    events: Vec<Event>,
}

struct Fork {
    stream: StreamId,
    capturing: Arc<AtomicBool>,
    unjoined: bool,
}

impl Stream {
    pub(crate) fn new(device: &Device) -> Result<Stream> {
        let cuda = match &device.inner.backend {
            Backend::Cuda { ctx, .. } => Some(
                ctx.new_stream()
                    .map_err(|e| Error::driver("cuStreamCreate", e))?,
            ),
            Backend::Emulator { .. } => None,
        };
        Ok(Stream {
            device: device.clone(),
            id: StreamId(NEXT_STREAM.fetch_add(1, Ordering::Relaxed)),
            cuda,
            capturing: Arc::new(AtomicBool::new(false)),
            capture: Mutex::new(Capture::default()),
        })
    }

    /// The device this stream belongs to.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// assert_eq!(device.stream()?.device().target(), device.target());
    /// # Ok(()) }
    /// ```
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the stream is inside [`Stream::capture`].
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// assert!(!kernel_runtime::Device::emulator().stream()?.is_capturing());
    /// # Ok(()) }
    /// ```
    pub fn is_capturing(&self) -> bool {
        self.capturing.load(Ordering::Acquire)
    }

    fn capture_state(&self) -> MutexGuard<'_, Capture> {
        self.capture.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The log this stream records into while capturing.
    fn log(&self) -> Arc<Mutex<CaptureLog>> {
        Arc::clone(&self.capture_state().log)
    }

    /// The stream that began the capture this stream was forked into.
    fn fork_origin(&self) -> Option<StreamId> {
        self.capture_state().origin
    }

    /// Notes captured work queued on this stream: a forked stream must be joined after it.
    fn note_captured_work(&self, log: &mut CaptureLog) {
        if let Some(fork) = log.forks.iter_mut().find(|f| f.stream == self.id) {
            fork.unjoined = true;
        }
    }

    /// Launches a kernel with arguments in parameter order, after checking them (count, kinds,
    /// element types, mutability, device), the launch shape and shared memory against the
    /// kernel's metadata and the device. The kernel is loaded on first use unless the device is
    /// sealed or the stream is capturing, where an unloaded kernel is an error. This is the
    /// entry point the `#[kernel]` launchers call.
    ///
    /// ```no_run
    /// # use std::borrow::Cow;
    /// # use kernel_dsl::{BlockContract, KernelArtifacts, KernelMeta};
    /// # static VECTOR_ADD: KernelArtifacts = KernelArtifacts {
    /// #     meta: KernelMeta { entry: Cow::Borrowed("vector_add"), params: Cow::Borrowed(&[]),
    /// #         block: BlockContract::Any, static_shared_bytes: 0, uses_dynamic_shared: false, min_dynamic_shared_bytes: 0, waits_on_prior_grid: false, cluster: None },
    /// #     ptx: Cow::Borrowed(&[]), cubins: Cow::Borrowed(&[]), emit: None, ir: None };
    /// use kernel_runtime::{Buffer, Device, KernelArg, LaunchConfig};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = Device::best().stream()?;
    /// let a = Buffer::from_host(&stream, &[1.0f32; 1000])?;
    /// let b = Buffer::from_host(&stream, &[2.0f32; 1000])?;
    /// let mut c = Buffer::<f32>::zeros(&stream, 1000)?;
    /// let args = [KernelArg::from(&a), KernelArg::from(&b), KernelArg::from(&mut c), KernelArg::from(1000u32)];
    /// stream.launch(&VECTOR_ADD, LaunchConfig::for_elements(1000, 256), &args)?;
    /// # Ok(()) }
    /// ```
    pub fn launch(
        &self,
        artifacts: &'static KernelArtifacts,
        cfg: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let meta = &artifacts.meta;
        let _launch = tracing::debug_span!(
            target: "ptxkit::launch",
            "launch",
            kernel = %meta.entry,
            grid = ?cfg.grid,
            block = ?cfg.block,
            dynamic_shared = cfg.dynamic_shared_bytes,
        )
        .entered();
        let dev = &self.device.inner;
        validate(meta, &cfg, args, &dev.props, dev.id)?;
        if args.len() > MAX_PARAMS {
            return Err(Error::TooManyParams {
                kernel: meta.entry.to_string(),
                count: args.len(),
                max: MAX_PARAMS,
            });
        }
        let capturing = self.is_capturing();
        let origin = if capturing { self.fork_origin() } else { None };
        for core in args.iter().filter_map(KernelArg::core) {
            core.note_use_on(self.id, capturing, origin)?;
        }
        let miss = if capturing { Miss::Refuse } else { Miss::Load };
        match self.device.kernel(artifacts, miss)? {
            KernelRef::Cuda(kernel) => {
                let mut slots = [0u64; MAX_PARAMS];
                for (slot, arg) in slots.iter_mut().zip(args) {
                    *slot = arg.slot();
                }
                // The driver reads each parameter's bytes through a pointer: a slot, or a
                // tensor map's own 128 bytes.
                let mut params = [std::ptr::null_mut::<std::ffi::c_void>(); MAX_PARAMS];
                for ((p, slot), arg) in params.iter_mut().zip(&slots).zip(args) {
                    *p = match arg {
                        KernelArg::TensorMap(m) => m.bytes().as_ptr() as *mut std::ffi::c_void,
                        _ => slot as *const u64 as *mut std::ffi::c_void,
                    };
                }
                let stream = self
                    .cuda
                    .as_ref()
                    .ok_or(Error::DeviceMismatch { op: "launch" })?;
                // A kernel that waits for the grid before it may start while that grid
                // finishes, on devices that have programmatic dependent launch.
                let early = meta.waits_on_prior_grid
                    && kernel_dsl::catalog::programmatic_launch(dev.props.target);
                cuda::launch(
                    &kernel.handle,
                    stream,
                    &cfg,
                    meta.static_shared_bytes,
                    &mut params[..args.len()],
                    early,
                )?;
            }
            KernelRef::Emulator(kernel) => {
                let emu_args = args
                    .iter()
                    .zip(meta.params.iter())
                    .map(|(arg, param)| emu_arg(param, arg))
                    .collect::<Vec<_>>();
                let op = EmuOp {
                    module: kernel.handle,
                    entry: meta.entry.to_string(),
                    cfg,
                    args: emu_args,
                };
                if capturing {
                    tracing::trace!(target: "ptxkit::launch", "recorded into the graph");
                    lock(&self.log()).ops.push(op);
                } else {
                    self.run_emulated(&op)?;
                }
            }
        }
        if capturing {
            let log = self.log();
            let mut log = lock(&log);
            log.launches += 1;
            log.keepalive.extend(
                args.iter()
                    .filter_map(KernelArg::core)
                    .map(|core| Arc::clone(core) as KeptAlive),
            );
            self.note_captured_work(&mut log);
        }
        Ok(())
    }

    pub(crate) fn run_emulated(&self, op: &EmuOp) -> Result<()> {
        let Backend::Emulator { engine, .. } = &self.device.inner.backend else {
            return Err(Error::DeviceMismatch { op: "launch" });
        };
        run_op(engine, op)
    }

    /// Captures the launches `record` queues on this stream into a [`Graph`] instead of running
    /// them. Inside, kernels must already be loaded (pre-warmed or launched before), and copies
    /// to or from the host are refused. The graph keeps every buffer it uses alive.
    ///
    /// ```no_run
    /// # use std::borrow::Cow;
    /// # use kernel_dsl::{BlockContract, KernelArtifacts, KernelMeta};
    /// # static STEP: KernelArtifacts = KernelArtifacts {
    /// #     meta: KernelMeta { entry: Cow::Borrowed("step"), params: Cow::Borrowed(&[]),
    /// #         block: BlockContract::Any, static_shared_bytes: 0, uses_dynamic_shared: false, min_dynamic_shared_bytes: 0, waits_on_prior_grid: false, cluster: None },
    /// #     ptx: Cow::Borrowed(&[]), cubins: Cow::Borrowed(&[]), emit: None, ir: None };
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// # let stream = kernel_runtime::Device::best().stream()?;
    /// # let mut x = kernel_runtime::Buffer::<f32>::zeros(&stream, 256)?;
    /// let cfg = kernel_runtime::LaunchConfig::for_elements(256, 256);
    /// stream.launch(&STEP, cfg, &[(&mut x).into()])?; // loads STEP outside capture
    /// let graph = stream.capture(|s| {
    ///     s.launch(&STEP, cfg, &[(&mut x).into()])?;
    ///     s.launch(&STEP, cfg, &[(&mut x).into()])
    /// })?;
    /// graph.replay()?;
    /// # Ok(()) }
    /// ```
    pub fn capture(&self, record: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        if self.is_capturing() {
            return Err(Error::NotAllowedDuringCapture { op: "capture" });
        }
        if let Some(stream) = &self.cuda {
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .map_err(|e| Error::driver("cuStreamBeginCapture", e))?;
        }
        let log = Arc::new(Mutex::new(CaptureLog::default()));
        *self.capture_state() = Capture {
            log: Arc::clone(&log),
            origin: None,
        };
        self.capturing.store(true, Ordering::Release);
        let recorded = record(self);
        self.capturing.store(false, Ordering::Release);
        let log = std::mem::take(&mut *lock(&log));
        // Every forked stream leaves the capture with it; one with work never joined back
        // makes the capture fail (CUDA refuses to end it too).
        let mut unjoined = 0;
        for fork in &log.forks {
            fork.capturing.store(false, Ordering::Release);
            unjoined += usize::from(fork.unjoined);
        }
        // Capture always ends, so a failed recording leaves the stream usable.
        let graph = match &self.cuda {
            Some(stream) => stream
                .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
                .map_err(|e| Error::driver("cuStreamEndCapture", e))
                .map(|g| Graph::cuda(g, log.launches, log.keepalive)),
            None => match &self.device.inner.backend {
                Backend::Emulator { engine, .. } => {
                    Ok(Graph::emulated(engine.clone(), log.ops, log.keepalive))
                }
                Backend::Cuda { .. } => Err(Error::DeviceMismatch { op: "capture" }),
            },
        };
        drop(log.events);
        recorded?;
        if unjoined > 0 {
            return Err(Error::UnjoinedFork { streams: unjoined });
        }
        graph
    }

    /// Makes `side`, another stream of this device, start after the work queued on this one so
    /// far; inside [`Stream::capture`] it also brings `side` into the capture, so that what it
    /// queues until [`Stream::join`] runs in the graph beside this stream's work (a gradient
    /// all-reduce beside the rest of the backward, say). A buffer allocated on this stream may
    /// be used on `side` from here on. Every fork inside a capture must be joined before the
    /// capture ends, or the capture fails with [`Error::UnjoinedFork`].
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let (main, side) = (device.stream()?, device.stream()?);
    /// let graph = main.capture(|s| {
    ///     s.fork(&side)?;
    ///     // ... launches on `side` and on `s`, in any order ...
    ///     s.join(&side)
    /// })?;
    /// graph.replay()?;
    /// # Ok(()) }
    /// ```
    pub fn fork(&self, side: &Stream) -> Result<()> {
        if side.id == self.id {
            return Err(Error::ForkOfItself);
        }
        if side.device.inner.id != self.device.inner.id {
            return Err(Error::DeviceMismatch { op: "fork" });
        }
        let event = self.device.event()?;
        event.record_on(self)?;
        event.wait_on(side)?;
        if !self.is_capturing() {
            return Ok(());
        }
        let log = self.log();
        let origin = self.fork_origin().unwrap_or(self.id);
        let mut entry = lock(&log);
        entry.events.push(event);
        if side.is_capturing() {
            // Already in this capture (forked before): the wait above orders it again.
            return match entry.forks.iter().any(|f| f.stream == side.id) {
                true => Ok(()),
                false => Err(Error::NotAllowedDuringCapture {
                    op: "fork of a stream that is capturing another graph",
                }),
            };
        }
        entry.forks.push(Fork {
            stream: side.id,
            capturing: Arc::clone(&side.capturing),
            unjoined: false,
        });
        drop(entry);
        *side.capture_state() = Capture {
            log,
            origin: Some(origin),
        };
        side.capturing.store(true, Ordering::Release);
        Ok(())
    }

    /// Makes the work queued on this stream from here on wait for everything queued on `side`
    /// so far: the end of a [`Stream::fork`].
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let (main, side) = (device.stream()?, device.stream()?);
    /// main.fork(&side)?;
    /// main.join(&side)?;
    /// # Ok(()) }
    /// ```
    pub fn join(&self, side: &Stream) -> Result<()> {
        if side.id == self.id {
            return Err(Error::ForkOfItself);
        }
        if side.device.inner.id != self.device.inner.id {
            return Err(Error::DeviceMismatch { op: "join" });
        }
        let event = self.device.event()?;
        event.record_on(side)?;
        event.wait_on(self)?;
        if self.is_capturing() {
            let log = self.log();
            let mut log = lock(&log);
            log.events.push(event);
            if let Some(fork) = log.forks.iter_mut().find(|f| f.stream == side.id) {
                fork.unjoined = false;
            }
        }
        Ok(())
    }

    /// Waits until all work queued on this stream has finished.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// kernel_runtime::Device::emulator().stream()?.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        if self.is_capturing() {
            return Err(Error::NotAllowedDuringCapture { op: "synchronize" });
        }
        match &self.cuda {
            Some(s) => s
                .synchronize()
                .map_err(|e| Error::driver("cuStreamSynchronize", e)),
            None => Ok(()),
        }
    }

    /// Records `event` after the work queued so far (for timing or cross-stream waits).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let stream = device.stream()?;
    /// let (start, end) = (device.event()?, device.event()?);
    /// stream.record(&start)?;
    /// stream.record(&end)?;
    /// assert!(start.elapsed_ms(&end)? >= 0.0);
    /// # Ok(()) }
    /// ```
    pub fn record(&self, event: &Event) -> Result<()> {
        if self.is_capturing() {
            return Err(Error::NotAllowedDuringCapture { op: "record" });
        }
        event.record_on(self)
    }

    /// Makes later work on this stream wait for `event` (recorded on any stream of the device).
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let (a, b) = (device.stream()?, device.stream()?);
    /// let done = device.event()?;
    /// a.record(&done)?;
    /// b.wait(&done)?;
    /// # Ok(()) }
    /// ```
    pub fn wait(&self, event: &Event) -> Result<()> {
        event.wait_on(self)
    }

    /// Called before a collective of `comm` queues on this stream with `cores`: they must be of
    /// this device, the first use on a foreign stream is ordered, and inside capture the graph
    /// keeps them and the communicator alive.
    pub(crate) fn note_collective(
        &self,
        cores: &[&Arc<BufferCore>],
        comm: Option<KeptAlive>,
    ) -> Result<()> {
        let capturing = self.is_capturing();
        let origin = if capturing { self.fork_origin() } else { None };
        for core in cores {
            if core.device != self.device.inner.id {
                return Err(Error::DeviceMismatch { op: "collective" });
            }
            core.note_use_on(self.id, capturing, origin)?;
        }
        if capturing {
            let log = self.log();
            let mut log = lock(&log);
            log.keepalive
                .extend(cores.iter().map(|core| Arc::clone(core) as KeptAlive));
            log.keepalive.extend(comm);
            self.note_captured_work(&mut log);
        }
        Ok(())
    }

    /// Allocates `bytes` stream-ordered: zero-filled, or (`zeroed` false, on CUDA) holding
    /// whatever the memory held.
    pub(crate) fn alloc_core(&self, bytes: usize, zeroed: bool) -> Result<BufferCore> {
        if self.is_capturing() {
            return Err(Error::NotAllowedDuringCapture { op: "allocate" });
        }
        let dev = &self.device.inner;
        let (addr, storage) = match (&dev.backend, &self.cuda) {
            (Backend::Cuda { .. }, Some(stream)) => {
                let slice = if zeroed {
                    stream.alloc_zeros::<u8>(bytes.max(1))
                } else {
                    // SAFETY: the bytes stay on the device, where kernels and copies treat them
                    // as plain data, and every bit pattern is a valid value of each `Element`
                    // type a buffer may later be read back as.
                    unsafe { stream.alloc::<u8>(bytes.max(1)) }
                }
                .map_err(|e| Error::driver("cuMemAllocAsync", e))?;
                let ptr = slice.device_ptr(stream).0;
                (ptr, Storage::Cuda(slice))
            }
            (Backend::Emulator { engine, .. }, None) => {
                let addr = engine.lock().alloc(bytes);
                (addr, Storage::Emulator(EmuMemory(engine.clone())))
            }
            _ => return Err(Error::DeviceMismatch { op: "allocate" }),
        };
        Ok(BufferCore {
            device: dev.id,
            addr,
            home_stream: self.id,
            foreign_use: AtomicBool::new(false),
            storage,
        })
    }

    fn check_copy(&self, core: &BufferCore, op: &'static str) -> Result<()> {
        if self.is_capturing() {
            return Err(Error::NotAllowedDuringCapture { op });
        }
        if core.device != self.device.inner.id {
            return Err(Error::DeviceMismatch { op });
        }
        core.note_use_on(self.id, false, None)
    }

    /// Stream-ordered copy of `data` to `offset` bytes into `core`.
    pub(crate) fn copy_in(&self, core: &BufferCore, offset: usize, data: &[u8]) -> Result<()> {
        self.check_copy(core, "copy_from_host")?;
        if data.is_empty() {
            return Ok(());
        }
        match (&core.storage, &self.cuda) {
            (Storage::Cuda(_), Some(stream)) => {
                stream
                    .context()
                    .bind_to_thread()
                    .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
                // SAFETY: the destination lies inside the buffer (the caller checked lengths);
                // for pageable host memory the driver stages `data` before returning, so the
                // slice need not outlive the call.
                unsafe {
                    cu::memcpy_htod_async(core.addr + offset as u64, data, stream.cu_stream())
                }
                .map_err(|e| Error::driver("cuMemcpyHtoDAsync", e))
            }
            (Storage::Emulator(mem), None) => mem
                .0
                .lock()
                .write(core.addr + offset as u64, data)
                .map_err(|detail| Error::Emulator {
                    kernel: "copy_from_host".into(),
                    detail,
                }),
            _ => Err(Error::DeviceMismatch {
                op: "copy_from_host",
            }),
        }
    }

    /// Stream-ordered copy of `bytes` bytes from `src` to `dst`, both on this stream's device;
    /// returns once it is queued.
    pub(crate) fn copy_within(
        &self,
        dst: &BufferCore,
        src: &BufferCore,
        bytes: usize,
    ) -> Result<()> {
        self.check_copy(src, "copy_from")?;
        self.check_copy(dst, "copy_from")?;
        if bytes == 0 {
            return Ok(());
        }
        match (&dst.storage, &src.storage, &self.cuda) {
            (Storage::Cuda(_), Storage::Cuda(_), Some(stream)) => {
                stream
                    .context()
                    .bind_to_thread()
                    .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
                // SAFETY: both ranges lie inside their buffers (the caller checked lengths), the
                // buffers are distinct allocations (one is borrowed mutably), and both stay
                // alive until the stream has run the copy (drop orders frees after it).
                unsafe { cu::memcpy_dtod_async(dst.addr, src.addr, bytes, stream.cu_stream()) }
                    .map_err(|e| Error::driver("cuMemcpyDtoDAsync", e))
            }
            (Storage::Emulator(mem), Storage::Emulator(_), None) => {
                let mut engine = mem.0.lock();
                let mut staged = vec![0u8; bytes];
                engine
                    .read(src.addr, &mut staged)
                    .and_then(|()| engine.write(dst.addr, &staged))
                    .map_err(|detail| Error::Emulator {
                        kernel: "copy_from".into(),
                        detail,
                    })
            }
            _ => Err(Error::DeviceMismatch { op: "copy_from" }),
        }
    }

    /// Stream-ordered copy from `offset` bytes into `core` to `out`; returns once it is done.
    pub(crate) fn copy_out(&self, core: &BufferCore, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_copy(core, "copy_to_host")?;
        if out.is_empty() {
            return Ok(());
        }
        match (&core.storage, &self.cuda) {
            (Storage::Cuda(_), Some(stream)) => {
                stream
                    .context()
                    .bind_to_thread()
                    .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
                // SAFETY: the source lies inside the buffer; `out` stays borrowed until the
                // stream is synchronized below, after which the copy has completed.
                unsafe {
                    cu::memcpy_dtoh_async(out, core.addr + offset as u64, stream.cu_stream())
                }
                .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e))?;
                stream
                    .synchronize()
                    .map_err(|e| Error::driver("cuStreamSynchronize", e))
            }
            (Storage::Emulator(mem), None) => mem
                .0
                .lock()
                .read(core.addr + offset as u64, out)
                .map_err(|detail| Error::Emulator {
                    kernel: "copy_to_host".into(),
                    detail,
                }),
            _ => Err(Error::DeviceMismatch { op: "copy_to_host" }),
        }
    }
}

fn lock(log: &Mutex<CaptureLog>) -> MutexGuard<'_, CaptureLog> {
    log.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn run_op(engine: &crate::emulator::SharedEngine, op: &EmuOp) -> Result<()> {
    engine
        .lock()
        .launch(op.module, &op.entry, &op.cfg, &op.args)
        .map_err(|detail| Error::Emulator {
            kernel: op.entry.clone(),
            detail,
        })
}

/// The emulator's view of one argument: buffers and views as the range the kernel may touch
/// (so an access past a view is caught as one past a buffer), scalars by their PTX width.
fn emu_arg(param: &ParamMeta, arg: &KernelArg<'_>) -> EmuArg {
    use crate::arg::ScalarValue as V;
    let view = |addr: u64, elem: kernel_dsl::ScalarType, len: usize| {
        EmuArg::View(EmuView {
            addr,
            bytes: len as u64 * elem.bytes() as u64,
            elem_bytes: elem.bytes(),
            name: param.name.to_string(),
        })
    };
    match (param.kind, arg) {
        (_, KernelArg::TensorMap(m)) => EmuArg::TensorMap(*m.bytes()),
        (_, KernelArg::Slice(v)) => view(v.addr(), v.elem(), v.len()),
        (_, KernelArg::SliceMut(v)) => view(v.addr(), v.elem(), v.len()),
        (ParamKind::Slice { .. }, a) => EmuArg::Ptr(a.slot()),
        (_, KernelArg::Scalar(v)) => match *v {
            V::U8(x) => EmuArg::U16(x as u16),
            V::I8(x) => EmuArg::U16(x as u8 as u16),
            V::U16(x) => EmuArg::U16(x),
            V::I16(x) => EmuArg::U16(x as u16),
            V::F16(x) => EmuArg::U16(x.to_bits()),
            V::Bf16(x) => EmuArg::U16(x.to_bits()),
            V::U32(x) => EmuArg::U32(x),
            V::I32(x) => EmuArg::S32(x),
            V::U64(x) => EmuArg::U64(x),
            V::I64(x) => EmuArg::S64(x),
            V::F32(x) => EmuArg::F32(x),
            V::F64(x) => EmuArg::F64(x),
        },
    }
}
