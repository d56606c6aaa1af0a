//! Events, for timing (created with `CU_EVENT_DEFAULT`, so they record time) and for making
//! one stream wait for another.

use crate::device::{Backend, Device, DeviceId};
use crate::error::{Error, Result};
use crate::stream::Stream;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;
use std::sync::Mutex;
use std::time::Instant;

/// A point in a stream's work.
///
/// ```
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let device = kernel_runtime::Device::emulator();
/// let stream = device.stream()?;
/// let (start, end) = (device.event()?, device.event()?);
/// stream.record(&start)?;
/// // ... launches ...
/// stream.record(&end)?;
/// println!("{} ms", start.elapsed_ms(&end)?);
/// # Ok(()) }
/// ```
pub struct Event {
    device: DeviceId,
    inner: Inner,
}

enum Inner {
    Cuda(CudaEvent),
    /// The emulator runs work as it is queued, so an event is the host time it was recorded.
    Emulator(Mutex<Option<Instant>>),
}

impl Device {
    /// A new timing event on this device.
    ///
    /// ```
    /// let event = kernel_runtime::Device::emulator().event().unwrap();
    /// assert!(event.synchronize().is_ok());
    /// ```
    pub fn event(&self) -> Result<Event> {
        let inner = match &self.inner.backend {
            Backend::Cuda { ctx, .. } => Inner::Cuda(
                ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| Error::driver("cuEventCreate", e))?,
            ),
            Backend::Emulator { .. } => Inner::Emulator(Mutex::new(None)),
        };
        Ok(Event {
            device: self.inner.id,
            inner,
        })
    }
}

impl Event {
    pub(crate) fn record_on(&self, stream: &Stream) -> Result<()> {
        if self.device != stream.device().inner.id {
            return Err(Error::DeviceMismatch { op: "record" });
        }
        match (&self.inner, &stream.cuda) {
            (Inner::Cuda(e), Some(s)) => e.record(s).map_err(|e| Error::driver("cuEventRecord", e)),
            (Inner::Emulator(t), None) => {
                *t.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                Ok(())
            }
            _ => Err(Error::DeviceMismatch { op: "record" }),
        }
    }

    pub(crate) fn wait_on(&self, stream: &Stream) -> Result<()> {
        if self.device != stream.device().inner.id {
            return Err(Error::DeviceMismatch { op: "wait" });
        }
        match (&self.inner, &stream.cuda) {
            (Inner::Cuda(e), Some(s)) => {
                s.wait(e).map_err(|e| Error::driver("cuStreamWaitEvent", e))
            }
            (Inner::Emulator(_), None) => Ok(()),
            _ => Err(Error::DeviceMismatch { op: "wait" }),
        }
    }

    fn instant(&self) -> Result<Option<Instant>> {
        match &self.inner {
            Inner::Emulator(t) => Ok(*t.lock().unwrap_or_else(|p| p.into_inner())),
            Inner::Cuda(_) => Ok(None),
        }
    }

    /// Waits until the work before the event's last record has finished.
    ///
    /// ```
    /// kernel_runtime::Device::emulator().event().unwrap().synchronize().unwrap();
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner {
            Inner::Cuda(e) => e
                .synchronize()
                .map_err(|e| Error::driver("cuEventSynchronize", e)),
            Inner::Emulator(_) => Ok(()),
        }
    }

    /// Milliseconds from this event to `end`, waiting for both.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let (a, b) = (device.event()?, device.event()?);
    /// assert!(a.elapsed_ms(&b).is_err()); // never recorded
    /// # Ok(()) }
    /// ```
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if self.device != end.device {
            return Err(Error::DeviceMismatch { op: "elapsed_ms" });
        }
        match (&self.inner, &end.inner) {
            (Inner::Cuda(a), Inner::Cuda(b)) => a.elapsed_ms(b).map_err(|e| match e.0 {
                cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_HANDLE => Error::EventNotRecorded,
                _ => Error::driver("cuEventElapsedTime", e),
            }),
            _ => match (self.instant()?, end.instant()?) {
                (Some(a), Some(b)) => Ok(b.saturating_duration_since(a).as_secs_f32() * 1e3),
                _ => Err(Error::EventNotRecorded),
            },
        }
    }
}
