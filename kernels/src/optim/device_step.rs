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
use super::ADVANCE;
use crate::codegen::math;
use crate::Error;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, F64, U32};
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};

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

    /// [`DeviceStep::advance`] through the builder-written kernel.
    pub(crate) fn advance_builder(
        &mut self,
        stream: &Stream,
        cfg: &AdamWConfig,
    ) -> Result<(), Error> {
        let args = [
            KernelArg::from(&mut self.count),
            KernelArg::from(&mut self.factors),
            KernelArg::from(cfg.lr),
            KernelArg::from(cfg.beta1),
            KernelArg::from(cfg.beta2),
        ];
        stream.launch(ADVANCE[0].artifacts(), LaunchConfig::linear(1, 32), &args)?;
        Ok(())
    }
}

/// Parameters: `count, factors, lr, beta1, beta2`. Thread 0 sets `t = count + 1`, stores it,
/// and writes `factors = [f32(lr / (1 − β1^t)), f32(1 / √(1 − β2^t))]`, computed in f64.
pub(crate) fn advance(_: ()) -> Kernel {
    let mut b = KernelBuilder::new("adamw_advance_step");
    let count = b.param_slice_mut::<U32>("count");
    let factors = b.param_slice_mut::<F32>("factors");
    let lr = b.param::<F32>("lr");
    let beta1 = b.param::<F32>("beta1");
    let beta2 = b.param::<F32>("beta2");
    let tid = b.tid(Dim::X);
    let zero = b.const_u32(0);
    let first = b.setp(Cmp::Eq, tid, zero);
    b.if_(first, |b| {
        let old = b.ld_global(&count, zero);
        let one = b.const_u32(1);
        let t = b.add(old, one);
        b.st_global(&count, zero, t);
        let onef = b.const_f32(1.0);
        let one64 = b.cvt::<F64, F32>(onef);
        let lr64 = b.cvt::<F64, F32>(lr);
        let p1 = powi(b, beta1, t, one64);
        let bc1 = b.sub(one64, p1);
        let step_size = b.div(lr64, bc1);
        let p2 = powi(b, beta2, t, one64);
        let bc2 = b.sub(one64, p2);
        let root = math::sqrt(b, bc2);
        let inv_root = b.div(one64, root);
        let i1 = b.const_u32(1);
        let step_size = b.cvt::<F32, F64>(step_size);
        let inv_root = b.cvt::<F32, F64>(inv_root);
        b.st_global(&factors, zero, step_size);
        b.st_global(&factors, i1, inv_root);
    });
    b.finish()
}

/// `base^t` in f64 by binary powering over the 32 bits of `t`: the same products, in the same
/// order, as `f64::powi` (the result only takes a factor where a bit is set; squarings past
/// the highest bit do not reach it).
fn powi(b: &mut KernelBuilder, base: Value<F32>, t: Value<U32>, one: Value<F64>) -> Value<F64> {
    let a0 = b.cvt::<F64, F32>(base);
    let a = b.var(a0);
    let r = b.var(one);
    let one_u = b.const_u32(1);
    let zero_u = b.const_u32(0);
    for bit in 0..32 {
        let shifted = b.shr(t, bit);
        let low = b.and(shifted, one_u);
        let set = b.setp(Cmp::Ne, low, zero_u);
        let taken = b.mul(r, a);
        let next = b.selp(set, taken, r);
        b.assign(r, next);
        let squared = b.mul(a, a);
        b.assign(a, squared);
    }
    r
}
