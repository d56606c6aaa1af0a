//! One NCCL communicator handle: creation, the collective calls on raw device addresses, the
//! asynchronous error query and abort. Everything here is FFI; the checks live in
//! `communicator.rs` and `shape.rs`.
//!
//! We call NCCL's C functions through cudarc's `result` layer rather than its `Comm`: we need
//! the raw handle for `ncclCommGetAsyncError` and `ncclCommAbort`, and our buffers order their
//! own stream use (cudarc's per-use events would also break graph capture).

use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use cudarc::nccl::result::{self as nccl, NcclError};
use cudarc::nccl::sys::{self, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

fn nccl_err(call: &'static str) -> impl FnOnce(NcclError) -> Error {
    move |e| Error::Nccl {
        call,
        code: format!("{:?}", e.0),
    }
}

/// The raw handle; `None` once aborted.
struct Handle(Option<ncclComm_t>);

// SAFETY: an NCCL communicator may be used from any thread provided calls on it do not
// overlap; every use goes through the `Mutex` below.
unsafe impl Send for Handle {}

/// An NCCL communicator on one CUDA device.
pub(crate) struct NcclComm {
    handle: Mutex<Handle>,
    ctx: Arc<CudaContext>,
}

impl NcclComm {
    /// Joins the communicator of `world` ranks named by `id` as `rank` (blocks until every
    /// rank has joined).
    pub fn init_rank(
        ctx: &Arc<CudaContext>,
        world: usize,
        id: sys::ncclUniqueId,
        rank: usize,
    ) -> Result<NcclComm> {
        bind(ctx)?;
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; world and rank were checked to fit and rank <
        // world by the caller; the device's context is current on this thread.
        unsafe { nccl::comm_init_rank(&mut raw, world as i32, id, rank as i32) }
            .map_err(nccl_err("ncclCommInitRank"))?;
        Ok(NcclComm::from_raw(ctx, raw))
    }

    /// One communicator per context, rank `i` on `ctxs[i]`, created from this thread.
    pub fn init_all(ctxs: &[Arc<CudaContext>]) -> Result<Vec<NcclComm>> {
        let ordinals: Vec<i32> = ctxs.iter().map(|c| c.ordinal() as i32).collect();
        let mut raws: Vec<ncclComm_t> = vec![std::ptr::null_mut(); ctxs.len()];
        // SAFETY: `raws` and `ordinals` both hold `ctxs.len()` elements.
        unsafe { nccl::comm_init_all(raws.as_mut_ptr(), raws.len() as i32, ordinals.as_ptr()) }
            .map_err(nccl_err("ncclCommInitAll"))?;
        Ok(ctxs
            .iter()
            .zip(raws)
            .map(|(ctx, raw)| NcclComm::from_raw(ctx, raw))
            .collect())
    }

    fn from_raw(ctx: &Arc<CudaContext>, raw: ncclComm_t) -> NcclComm {
        NcclComm {
            handle: Mutex::new(Handle(Some(raw))),
            ctx: ctx.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Handle> {
        self.handle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live handle, bound to this thread's context, for one call.
    fn with<R>(&self, call: impl FnOnce(ncclComm_t) -> Result<R>) -> Result<R> {
        let handle = self.lock();
        let raw = handle.0.ok_or(Error::CommunicatorAborted)?;
        bind(&self.ctx)?;
        call(raw)
    }

    /// `ncclAllReduce` of `count` elements from `send` into `recv` (equal for in place).
    pub fn all_reduce(&self, c: Call, op: ncclRedOp_t) -> Result<()> {
        self.with(|comm| {
            // SAFETY: the caller checked that both ranges lie in live buffers of this device
            // holding `count` elements of `dtype`, and keeps them alive until the stream runs.
            unsafe { nccl::all_reduce(c.send, c.recv, c.count, c.dtype, op, comm, c.stream) }
                .map(drop)
                .map_err(nccl_err("ncclAllReduce"))
        })
    }

    /// `ncclReduceScatter`: `count` is the per-rank (received) element count.
    pub fn reduce_scatter(&self, c: Call, op: ncclRedOp_t) -> Result<()> {
        self.with(|comm| {
            // SAFETY: as for all_reduce; `send` holds `count * world` elements.
            unsafe { nccl::reduce_scatter(c.send, c.recv, c.count, c.dtype, op, comm, c.stream) }
                .map(drop)
                .map_err(nccl_err("ncclReduceScatter"))
        })
    }

    /// `ncclAllGather`: `count` is the per-rank (sent) element count.
    pub fn all_gather(&self, c: Call) -> Result<()> {
        self.with(|comm| {
            // SAFETY: as for all_reduce; `recv` holds `count * world` elements.
            unsafe { nccl::all_gather(c.send, c.recv, c.count, c.dtype, comm, c.stream) }
                .map(drop)
                .map_err(nccl_err("ncclAllGather"))
        })
    }

    /// `ncclBroadcast` of `count` elements from rank `root`.
    pub fn broadcast(&self, c: Call, root: usize) -> Result<()> {
        self.with(|comm| {
            // SAFETY: as for all_reduce; root was checked to be a rank of this communicator.
            unsafe {
                nccl::broadcast(
                    c.send,
                    c.recv,
                    c.count,
                    c.dtype,
                    root as i32,
                    comm,
                    c.stream,
                )
            }
            .map(drop)
            .map_err(nccl_err("ncclBroadcast"))
        })
    }

    /// The communicator's asynchronous error (a failed peer, a network error), if any.
    pub fn async_error(&self) -> Result<()> {
        self.with(|comm| {
            let mut state = ncclResult_t::ncclSuccess;
            // SAFETY: `comm` is live (not aborted) and `state` is a valid out-pointer.
            unsafe { sys::ncclCommGetAsyncError(comm, &mut state) }
                .result()
                .map_err(nccl_err("ncclCommGetAsyncError"))?;
            match state {
                ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress => Ok(()),
                other => Err(Error::Nccl {
                    call: "ncclCommGetAsyncError",
                    code: format!("{other:?}"),
                }),
            }
        })
    }

    /// Aborts the communicator: its queued and running operations stop, and every later call
    /// is [`Error::CommunicatorAborted`].
    pub fn abort(&self) {
        let mut handle = self.lock();
        if let Some(raw) = handle.0.take() {
            // Abort is best effort: the communicator is unusable either way.
            let _ = bind(&self.ctx);
            // SAFETY: `raw` is live and, taken out of the handle, is never used again.
            let _ = unsafe { nccl::comm_abort(raw) };
        }
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // Abort rather than destroy: destroy waits for peers, which may be gone.
        self.abort();
    }
}

/// The operands of one collective call.
#[derive(Clone, Copy)]
pub(crate) struct Call {
    pub send: *const c_void,
    pub recv: *mut c_void,
    pub count: usize,
    pub dtype: ncclDataType_t,
    pub stream: sys::cudaStream_t,
}

fn bind(ctx: &Arc<CudaContext>) -> Result<()> {
    ctx.bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))
}
