//! AdamW over many tensors in one launch. Parameters, gradients and both moments live in flat
//! buffers laid out by a [`ParamLayout`] (each tensor 8-element aligned); a small device-side
//! work table, built once by [`AdamW::new`], gives every CTA one chunk of one tensor and the
//! tensor's weight-decay flag. The step takes lr, betas, eps, weight decay and the step number
//! as arguments (bias corrections are computed on the host in f64), keeps f32 master weights,
//! reads f32 or bf16 gradients, and optionally writes a bf16 copy of the updated weights.
//! [`AdamW::step_on_device`] keeps the step number in a [`DeviceStep`] on the device instead,
//! so a graph captured around it takes the next step on every replay.
//! [`ParamLayout::copy_out`] / [`ParamLayout::copy_in`] move one tensor between a flat buffer
//! and a buffer of its own on the device, for ops that take whole buffers.

mod device_step;
mod layout;
pub mod reference;
mod step_kernel;

pub use device_step::DeviceStep;
pub use layout::{ParamLayout, TENSOR_ALIGN};
pub use reference::AdamWConfig;

use crate::op_kernel::kernel_refs;
use crate::Float;
use crate::{check_len, Error, OpKernel};
use kernel_runtime::{Bf16, Buffer, LaunchConfig, Stream};
use std::sync::Mutex;

static ADAMW_STEP: [OpKernel; 16] = OpKernel::instances(step_kernel::ADAMW_STEP_INSTANCES);
static ADAMW_ADVANCE: [OpKernel; 1] = [OpKernel::language(&step_kernel::ADAMW_ADVANCE)];

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    ADAMW_STEP[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
    ADAMW_ADVANCE[0],
];

/// Where an update's step number comes from.
enum StepSource<'a> {
    /// Given by the host; its bias corrections become launch scalars.
    Host(u32),
    /// Kept on the device; its factors are read from device memory.
    Device(&'a Buffer<f32>),
}

/// An AdamW optimizer over a fixed set of tensors: the layout and its device work table.
pub struct AdamW {
    layout: ParamLayout,
    chunks: Option<Buffer<u32>>,
    decay: Option<Buffer<f32>>,
    /// Stands in for the bf16 copy a step without one does not write (the kernel takes the
    /// same buffers in every instance).
    no_copy: Option<Mutex<Buffer<Bf16>>>,
    nchunks: u32,
}

/// The flat buffers one [`AdamW::step`] updates.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::optim::AdamWState;
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = Device::emulator().stream()?;
/// let (mut p, mut m, mut v) = (Buffer::<f32>::zeros(&stream, 8)?, Buffer::zeros(&stream, 8)?, Buffer::zeros(&stream, 8)?);
/// let g = Buffer::<Bf16>::zeros(&stream, 8)?; // bf16 gradients
/// let mut copy = Buffer::<Bf16>::zeros(&stream, 8)?;
/// let state = AdamWState { params: &mut p, grads: &g, m: &mut m, v: &mut v, bf16_copy: Some(&mut copy), clip: None };
/// assert!(state.bf16_copy.is_some());
/// # Ok(()) }
/// ```
pub struct AdamWState<'a, G: Float> {
    /// f32 master weights, updated in place.
    pub params: &'a mut Buffer<f32>,
    /// Gradients (f32 or bf16), read only.
    pub grads: &'a Buffer<G>,
    /// First moments, updated in place (start at zero).
    pub m: &'a mut Buffer<f32>,
    /// Second moments, updated in place (start at zero).
    pub v: &'a mut Buffer<f32>,
    /// Where to write a bf16 copy of the updated weights, if wanted.
    pub bf16_copy: Option<&'a mut Buffer<Bf16>>,
    /// The `[norm, scale]` pair [`clip::grad_norm`](crate::clip::grad_norm) writes: when
    /// given, gradients are multiplied by its scale as they are read, so clipping costs no
    /// extra pass over the gradients (and no host round trip).
    pub clip: Option<&'a Buffer<f32>>,
}

impl AdamW {
    /// Lays out tensors of lengths `lens`; `decay[i]` says whether tensor `i` gets weight
    /// decay (commonly false for norms and biases). Uploads the work table on `stream`.
    ///
    /// ```
    /// use kernel_runtime::{Buffer, Device};
    /// use kernels::optim::{AdamW, AdamWConfig, AdamWState};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let opt = AdamW::new(&stream, &[3, 2], &[true, false])?;
    /// let n = opt.layout().total();
    /// let mut params = Buffer::from_host(&stream, &vec![1.0f32; n])?;
    /// let grads = Buffer::from_host(&stream, &vec![0.5f32; n])?;
    /// let (mut m, mut v) = (Buffer::<f32>::zeros(&stream, n)?, Buffer::<f32>::zeros(&stream, n)?);
    /// let state = AdamWState { params: &mut params, grads: &grads, m: &mut m, v: &mut v, bf16_copy: None, clip: None };
    /// opt.step(&stream, 1, &AdamWConfig::default(), state)?;
    /// assert!(params.to_host(&stream)?[0] < 1.0);
    /// # Ok(()) }
    /// ```
    pub fn new(stream: &Stream, lens: &[usize], decay: &[bool]) -> Result<AdamW, Error> {
        check_len("AdamW::new", "decay", decay.len(), lens.len(), || {
            "one flag per tensor".into()
        })?;
        let layout = ParamLayout::new(lens)?;
        let table = layout.chunk_table();
        let nchunks = (table.len() / 3) as u32;
        let (chunks, decay, no_copy) = if nchunks == 0 {
            (None, None, None)
        } else {
            let flags: Vec<f32> = decay.iter().map(|&d| d as u8 as f32).collect();
            (
                Some(Buffer::from_host(stream, &table)?),
                Some(Buffer::from_host(stream, &flags)?),
                Some(Mutex::new(Buffer::zeros(stream, 1)?)),
            )
        };
        Ok(AdamW {
            layout,
            chunks,
            decay,
            no_copy,
            nchunks,
        })
    }

    /// The flat layout every buffer of [`AdamWState`] follows.
    ///
    /// ```
    /// # let stream = kernel_runtime::Device::emulator().stream().unwrap();
    /// let opt = kernels::optim::AdamW::new(&stream, &[4], &[true]).unwrap();
    /// assert_eq!(opt.layout().total(), 8);
    /// ```
    pub fn layout(&self) -> &ParamLayout {
        &self.layout
    }

    /// One AdamW step (`step` counts from 1) over every tensor, in one launch. Every buffer
    /// of `state` holds [`ParamLayout::total`] elements.
    ///
    /// ```
    /// use kernel_runtime::{Buffer, Device};
    /// use kernels::optim::{AdamW, AdamWConfig, AdamWState};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let opt = AdamW::new(&stream, &[2], &[false])?;
    /// let n = opt.layout().total();
    /// let mut p = Buffer::from_host(&stream, &vec![0.0f32; n])?;
    /// let g = Buffer::from_host(&stream, &vec![1.0f32; n])?;
    /// let (mut m, mut v) = (Buffer::<f32>::zeros(&stream, n)?, Buffer::<f32>::zeros(&stream, n)?);
    /// let cfg = AdamWConfig { lr: 0.1, ..AdamWConfig::default() };
    /// for step in 1..=3 {
    ///     let state = AdamWState { params: &mut p, grads: &g, m: &mut m, v: &mut v, bf16_copy: None, clip: None };
    ///     opt.step(&stream, step, &cfg, state)?;
    /// }
    /// // A constant gradient moves each step by about lr.
    /// assert!((p.to_host(&stream)?[0] + 0.3).abs() < 1e-3);
    /// # Ok(()) }
    /// ```
    pub fn step<G: Float>(
        &self,
        stream: &Stream,
        step: u32,
        cfg: &AdamWConfig,
        state: AdamWState<'_, G>,
    ) -> Result<(), Error> {
        crate::float::f32_or_bf16::<G>("step")?;
        check_step(step)?;
        self.launch(stream, StepSource::Host(step), cfg, state)
    }

    /// One AdamW step whose step number lives on the device in `step`: a first launch adds one
    /// to it and writes the step's bias-correction factors, the update reads them. Nothing
    /// depends on the host between steps, so a graph captured around this call takes the next
    /// step on every replay (with [`AdamW::step`], a replay would repeat the captured step's
    /// bias corrections). The result has the same bits as [`AdamW::step`] with the same step
    /// number.
    ///
    /// ```
    /// use kernel_runtime::{Buffer, Device};
    /// use kernels::optim::{AdamW, AdamWConfig, AdamWState, DeviceStep};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let opt = AdamW::new(&stream, &[2], &[false])?;
    /// let n = opt.layout().total();
    /// let mut p = Buffer::from_host(&stream, &vec![0.0f32; n])?;
    /// let g = Buffer::from_host(&stream, &vec![1.0f32; n])?;
    /// let (mut m, mut v) = (Buffer::<f32>::zeros(&stream, n)?, Buffer::<f32>::zeros(&stream, n)?);
    /// let mut step = DeviceStep::new(&stream)?;
    /// let cfg = AdamWConfig { lr: 0.1, ..AdamWConfig::default() };
    /// for _ in 0..3 {
    ///     let state = AdamWState { params: &mut p, grads: &g, m: &mut m, v: &mut v, bf16_copy: None, clip: None };
    ///     opt.step_on_device(&stream, &mut step, &cfg, state)?;
    /// }
    /// assert_eq!(step.count(&stream)?, 3);
    /// assert!((p.to_host(&stream)?[0] + 0.3).abs() < 1e-3);
    /// # Ok(()) }
    /// ```
    pub fn step_on_device<G: Float>(
        &self,
        stream: &Stream,
        step: &mut DeviceStep,
        cfg: &AdamWConfig,
        state: AdamWState<'_, G>,
    ) -> Result<(), Error> {
        crate::float::f32_or_bf16::<G>("step_on_device")?;
        self.check(&state)?;
        step.advance(stream, cfg)?;
        self.launch(stream, StepSource::Device(&step.factors), cfg, state)
    }

    fn check<G: Float>(&self, state: &AdamWState<'_, G>) -> Result<(), Error> {
        const OP: &str = "adamw";
        let total = self.layout.total();
        let why = || format!("the layout's total, {total}");
        check_len(OP, "params", state.params.len(), total, why)?;
        check_len(OP, "grads", state.grads.len(), total, why)?;
        check_len(OP, "m", state.m.len(), total, why)?;
        check_len(OP, "v", state.v.len(), total, why)?;
        if let Some(c) = &state.bf16_copy {
            check_len(OP, "bf16_copy", c.len(), total, why)?;
        }
        if let Some(c) = state.clip {
            check_len(OP, "clip", c.len(), 2, || "[norm, scale]".into())?;
        }
        Ok(())
    }

    fn launch<G: Float>(
        &self,
        stream: &Stream,
        source: StepSource<'_>,
        cfg: &AdamWConfig,
        state: AdamWState<'_, G>,
    ) -> Result<(), Error> {
        self.check(&state)?;
        let (Some(chunks), Some(decay), Some(no_copy)) = (&self.chunks, &self.decay, &self.no_copy)
        else {
            return Ok(());
        };
        // A buffer the instance does not read stands in for an absent one.
        let (step_size, inv_sqrt_bc2, factors, device) = match source {
            StepSource::Host(step) => {
                let (s, i) = host_factors(cfg, step);
                (s, i, decay, 0)
            }
            StepSource::Device(factors) => (0.0, 0.0, factors, 1),
        };
        let (clip, scaled) = match state.clip {
            Some(c) => (c, 1),
            None => (decay, 0),
        };
        let mut spare = no_copy.lock().unwrap_or_else(|e| e.into_inner());
        let (bf16_copy, copy) = match state.bf16_copy {
            Some(c) => (c, 1),
            None => (&mut *spare, 0),
        };
        step_kernel::adamw_step::<G>(
            stream,
            LaunchConfig::linear(self.nchunks, STEP_THREADS),
            copy,
            scaled,
            device,
            state.params,
            state.grads,
            state.m,
            state.v,
            bf16_copy,
            clip,
            factors,
            chunks,
            decay,
            cfg.lr,
            cfg.beta1,
            cfg.beta2,
            cfg.eps,
            cfg.weight_decay,
            step_size,
            inv_sqrt_bc2,
        )?;
        Ok(())
    }
}

/// Threads of a step block: with the kernel's four groups of four elements a thread, one
/// [`layout::CHUNK`] a block in one pass, every load issued before any arithmetic.
const STEP_THREADS: u32 = 256;

fn check_step(step: u32) -> Result<(), Error> {
    if step == 0 {
        return Err(Error::Unsupported {
            op: "adamw",
            detail: "step is 0; steps count from 1 (the bias corrections divide by 1 − β^step)"
                .into(),
        });
    }
    Ok(())
}

/// `(lr / (1 − β1^step), 1 / √(1 − β2^step))`, in f64 rounded to f32 (as the device step's
/// advance kernel computes them).
fn host_factors(cfg: &AdamWConfig, step: u32) -> (f32, f32) {
    let (b1, b2) = (cfg.beta1 as f64, cfg.beta2 as f64);
    let bc1 = 1.0 - b1.powi(step as i32);
    let bc2 = 1.0 - b2.powi(step as i32);
    ((cfg.lr as f64 / bc1) as f32, (1.0 / bc2.sqrt()) as f32)
}
