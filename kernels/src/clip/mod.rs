//! Gradient clipping by global norm without a host round trip: per-CTA sums of squares, one
//! CTA that adds them in a fixed order into the norm and the clip scale (kept on the device),
//! and an in-place scaling that reads the scale from device memory. Three launches with fixed
//! shapes and no host synchronization, so they can be captured in a graph; the result is
//! bit-identical run to run.
//!
//! In a training step, prefer [`grad_norm`] followed by an AdamW step given the `[norm, scale]`
//! buffer ([`AdamWState::clip`](crate::optim::AdamWState::clip)): the optimizer applies the
//! scale as it reads the gradients, saving the read and write of [`clip_grad_norm`]'s scaling
//! pass.
//!
//! Clip several tensors at once by keeping them in one flat buffer (for instance the
//! gradients of an [`optim::ParamLayout`](crate::optim::ParamLayout)); padding between tensors
//! must hold zeros.

mod norm_kernel;
pub mod reference;

/// f32s of workspace the clipping ops need: a partial sum per block of the sum of squares,
/// and the counter the scaling pass hands out its chunks from.
pub const WORKSPACE_LEN: u32 = MAX_PARTS + 1;
/// Where the scaling pass's counter lives in the workspace, after the partial sums.
const COUNTER: u32 = MAX_PARTS;

use crate::elementwise::launch::MAP_THREADS;
use crate::op_kernel::kernel_refs;
use crate::Float;
use crate::{check_len, Error, FloatType, OpKernel};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Most blocks of the passes over the gradients, so partial sums in the workspace.
const MAX_PARTS: u32 = 1024;
/// Threads of the finishing kernel (one block).
const FINISH_THREADS: u32 = 1024;

static GRAD_SUM_SQUARES: [OpKernel; 2] =
    OpKernel::instances(norm_kernel::GRAD_SUM_SQUARES_INSTANCES);
static GRAD_NORM_FINISH: [OpKernel; 1] = [OpKernel::language(&norm_kernel::GRAD_NORM_FINISH)];
static GRAD_SCALE: [OpKernel; 2] = OpKernel::instances(norm_kernel::GRAD_SCALE_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    GRAD_SUM_SQUARES[0 1],
    GRAD_NORM_FINISH[0],
    GRAD_SCALE[0 1],
];

fn check_args(
    op: &'static str,
    n: usize,
    workspace: usize,
    norm_scale: usize,
    max_norm: f32,
) -> Result<u32, Error> {
    if !(max_norm.is_finite() && max_norm > 0.0) {
        return Err(Error::Unsupported {
            op,
            detail: format!("max_norm is {max_norm}; pass a positive, finite norm"),
        });
    }
    check_len(op, "norm_scale", norm_scale, 2, || "[norm, scale]".into())?;
    if workspace < WORKSPACE_LEN as usize {
        return Err(Error::Length {
            op,
            buffer: "workspace",
            expected: WORKSPACE_LEN as usize,
            actual: workspace,
            why: "at least `clip::WORKSPACE_LEN`".into(),
        });
    }
    u32::try_from(n).map_err(|_| Error::Unsupported {
        op,
        detail: format!("{n} gradients exceed {}; clip in groups", u32::MAX),
    })
}

/// Computes the global L2 norm of `grads` and the clip scale
/// `min(1, max_norm / (norm + 1e-6))` into `norm_scale = [norm, scale]` on the device, without
/// changing `grads`. `workspace` holds at least [`WORKSPACE_LEN`] f32s.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let grads = Buffer::from_host(&stream, &[3.0f32, 4.0])?;
/// let mut ws = Buffer::<f32>::zeros(&stream, kernels::clip::WORKSPACE_LEN as usize)?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::clip::grad_norm(&stream, &grads, 10.0, &mut ws, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, vec![5.0, 1.0]);
/// # Ok(()) }
/// ```
pub fn grad_norm<T: Float>(
    stream: &Stream,
    grads: &Buffer<T>,
    max_norm: f32,
    workspace: &mut Buffer<f32>,
    norm_scale: &mut Buffer<f32>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("grad_norm")?;
    let n = check_args(
        "grad_norm",
        grads.len(),
        workspace.len(),
        norm_scale.len(),
        max_norm,
    )?;
    let parts = parts_for(n, T::TYPE);
    let cfg = LaunchConfig::linear(parts, MAP_THREADS);
    norm_kernel::grad_sum_squares::<T>(stream, cfg, grads, workspace, n)?;
    let cfg = LaunchConfig::linear(1, FINISH_THREADS);
    norm_kernel::grad_norm_finish(stream, cfg, workspace, norm_scale, parts, COUNTER, max_norm)?;
    Ok(())
}

/// Clips `grads` in place to global L2 norm `max_norm` (PyTorch's `clip_grad_norm_`): computes
/// the norm as [`grad_norm`] does, leaves `[norm, scale]` in `norm_scale`, and multiplies
/// every gradient by the scale when it is below 1. A non-finite norm leaves the gradients
/// unchanged and is reported in `norm_scale[0]`, so the caller can skip the step.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let mut grads = Buffer::from_host(&stream, &[3.0f32, 4.0])?;
/// let mut ws = Buffer::<f32>::zeros(&stream, kernels::clip::WORKSPACE_LEN as usize)?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::clip::clip_grad_norm(&stream, &mut grads, 1.0, &mut ws, &mut out)?;
/// let g = grads.to_host(&stream)?;
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// # Ok(()) }
/// ```
pub fn clip_grad_norm<T: Float>(
    stream: &Stream,
    grads: &mut Buffer<T>,
    max_norm: f32,
    workspace: &mut Buffer<f32>,
    norm_scale: &mut Buffer<f32>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("clip_grad_norm")?;
    grad_norm(stream, grads, max_norm, workspace, norm_scale)?;
    let n = grads.len() as u32;
    let cfg = LaunchConfig::linear(parts_for(n, T::TYPE), MAP_THREADS);
    norm_kernel::grad_scale::<T>(stream, cfg, grads, norm_scale, workspace, COUNTER, n)?;
    Ok(())
}

/// Blocks of the passes over `n` gradients: enough to fill the device, at most
/// [`MAX_PARTS`]; a function of `n` only, so results do not depend on the device.
fn parts_for(n: u32, storage: FloatType) -> u32 {
    (n / storage.per_vector())
        .div_ceil(MAP_THREADS)
        .clamp(1, MAX_PARTS)
}
