//! The AdamW step number kept on the device. [`AdamW::step`](super::AdamW::step) takes the
//! step as an argument and passes its bias corrections as launch scalars, so a captured graph
//! would replay the first step's corrections forever. [`DeviceStep`] keeps the count in device
//! memory instead: one single-thread kernel advances it and writes the step's factors, which
//! the `_device_step` variants of the update kernel read, so every replay is the next step.
//!
//! The factors are computed as the host computes them for [`AdamW::step`](super::AdamW::step),
//! in f64 with the same operations (`β^t` by binary powering, as `f64::powi` does), then
//! rounded to f32: the two paths give the same bits.

use super::reference::AdamWConfig;
use super::step_kernel::adamw_advance;
use crate::Error;
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// The step count and the current step's factors `[lr / (1 − β1^t), 1 / √(1 − β2^t)]`, on
/// the device.
///
/// ```
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let step = kernels::optim::DeviceStep::new(&stream)?;
/// assert_eq!(step.count(&stream)?, 0);
/// # Ok(()) }
/// ```
pub struct DeviceStep {
    pub(crate) count: Buffer<u32>,
    pub(crate) factors: Buffer<f32>,
}

impl DeviceStep {
    /// A count of 0: the first [`AdamW::step_on_device`](super::AdamW::step_on_device) is
    /// step 1.
    pub fn new(stream: &Stream) -> Result<DeviceStep, Error> {
        Ok(DeviceStep {
            count: Buffer::zeros(stream, 1)?,
            factors: Buffer::zeros(stream, 2)?,
        })
    }

    /// The number of steps taken so far (a copy to the host; not allowed inside a capture).
    ///
    /// ```
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = kernel_runtime::Device::emulator().stream()?;
    /// let mut step = kernels::optim::DeviceStep::new(&stream)?;
    /// step.set_count(&stream, 41)?;
    /// assert_eq!(step.count(&stream)?, 41);
    /// # Ok(()) }
    /// ```
    pub fn count(&self, stream: &Stream) -> Result<u32, Error> {
        Ok(self.count.to_host(stream)?[0])
    }

    /// Sets the number of steps taken (to resume, or to restart after a warm-up step).
    pub fn set_count(&mut self, stream: &Stream, count: u32) -> Result<(), Error> {
        self.count.copy_from_host(stream, &[count])?;
        Ok(())
    }

    /// Queues the kernel that adds one to the count and writes the new step's factors.
    pub(crate) fn advance(&mut self, stream: &Stream, cfg: &AdamWConfig) -> Result<(), Error> {
        adamw_advance(
            stream,
            LaunchConfig::linear(1, 32),
            &mut self.count,
            &mut self.factors,
            cfg.lr,
            cfg.beta1,
            cfg.beta2,
        )?;
        Ok(())
    }
}
