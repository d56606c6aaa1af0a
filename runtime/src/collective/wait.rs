//! Waiting for a stream's collectives with a deadline. A dead peer leaves NCCL's kernels
//! spinning forever, so the wait polls the stream and the communicator's asynchronous error,
//! and aborts the communicator when the deadline passes.

use super::nccl_comm::NcclComm;
use crate::error::{Error, Result};
use crate::stream::Stream;
use cudarc::driver::sys::{cuStreamQuery, CUresult};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_micros(200);

/// Returns once `stream` is idle; a communicator error or the deadline aborts `comm` and
/// returns the error.
pub(crate) fn until_idle(comm: &NcclComm, stream: &Stream, timeout: Duration) -> Result<()> {
    if stream.is_capturing() {
        return Err(Error::NotAllowedDuringCapture { op: "wait" });
    }
    let cuda = stream
        .cuda
        .as_ref()
        .ok_or(Error::DeviceMismatch { op: "wait" })?;
    cuda.context()
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let start = Instant::now();
    loop {
        // SAFETY: the stream handle is live for as long as `stream`.
        match unsafe { cuStreamQuery(cuda.cu_stream()) } {
            CUresult::CUDA_SUCCESS => return Ok(()),
            CUresult::CUDA_ERROR_NOT_READY => {}
            other => {
                comm.abort();
                return Err(Error::Driver {
                    call: "cuStreamQuery",
                    code: format!("{other:?}"),
                });
            }
        }
        if let Err(e) = comm.async_error() {
            comm.abort();
            return Err(e);
        }
        if start.elapsed() >= timeout {
            comm.abort();
            return Err(Error::CollectiveTimeout {
                op: "wait",
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            });
        }
        std::thread::sleep(POLL);
    }
}
