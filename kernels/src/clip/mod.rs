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

mod kernels;
mod norm_kernel;
pub mod reference;

pub use kernels::MAX_PARTS as WORKSPACE_LEN;

use crate::codegen::map::{map_launch, step_elems, MAP_THREADS};
use crate::codegen::{kernel_refs, kernel_table};
use crate::Float;
use crate::{check_len, Error, FloatType, OpKernel};
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};
use kernels::{apply, finish, sum_squares, FINISH_THREADS};

const TYPES: [FloatType; 2] = [FloatType::F32, FloatType::Bf16];

kernel_table!(static SUM_SQUARES = sum_squares, TYPES, [0 1]);
kernel_table!(static FINISH = finish, [()], [0]);
kernel_table!(static APPLY = apply, TYPES, [0 1]);

static GRAD_SUM_SQUARES: [OpKernel; 2] =
    OpKernel::instances(norm_kernel::GRAD_SUM_SQUARES_INSTANCES);
static GRAD_NORM_FINISH: [OpKernel; 1] = [OpKernel::language(&norm_kernel::GRAD_NORM_FINISH)];
static GRAD_SCALE: [OpKernel; 2] = OpKernel::instances(norm_kernel::GRAD_SCALE_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    GRAD_SUM_SQUARES[0 1],
    GRAD_NORM_FINISH[0],
    GRAD_SCALE[0 1],
    SUM_SQUARES[0 1],
    FINISH[0],
    APPLY[0 1],
];

fn storage_index(s: FloatType) -> usize {
    match s {
        FloatType::F32 => 0,
        FloatType::Bf16 => 1,
        FloatType::F16 => unreachable!("f16 is refused when the op is called (`f32_or_bf16`)"),
    }
}

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
    norm_kernel::grad_norm_finish(stream, cfg, workspace, norm_scale, parts, max_norm)?;
    Ok(())
}

/// [`grad_norm`] through the builder-written kernels it replaces, kept only until the two
/// have been measured side by side (`bench_optim`).
#[doc(hidden)]
pub fn grad_norm_builder<T: Float>(
    stream: &Stream,
    grads: &Buffer<T>,
    max_norm: f32,
    workspace: &mut Buffer<f32>,
    norm_scale: &mut Buffer<f32>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("grad_norm_builder")?;
    const OP: &str = "grad_norm";
    let n = check_args(OP, grads.len(), workspace.len(), norm_scale.len(), max_norm)?;
    let step = step_elems([T::TYPE]);
    let parts = kernels::parts_for(n, step);
    let args = [
        KernelArg::from(grads),
        KernelArg::from(&mut *workspace),
        KernelArg::from(n),
    ];
    let kernel = &SUM_SQUARES[storage_index(T::TYPE)];
    stream.launch(
        kernel.artifacts(),
        LaunchConfig::linear(parts, MAP_THREADS),
        &args,
    )?;
    let args = [
        KernelArg::from(&*workspace),
        KernelArg::from(&mut *norm_scale),
        KernelArg::from(parts),
        KernelArg::from(max_norm),
    ];
    let cfg = LaunchConfig::linear(1, FINISH_THREADS);
    stream.launch(FINISH[0].artifacts(), cfg, &args)?;
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
    norm_kernel::grad_scale::<T>(stream, cfg, grads, norm_scale, n)?;
    Ok(())
}

/// [`clip_grad_norm`] through the builder-written kernels it replaces, kept only until the
/// two have been measured side by side (`bench_optim`).
#[doc(hidden)]
pub fn clip_grad_norm_builder<T: Float>(
    stream: &Stream,
    grads: &mut Buffer<T>,
    max_norm: f32,
    workspace: &mut Buffer<f32>,
    norm_scale: &mut Buffer<f32>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("clip_grad_norm_builder")?;
    grad_norm_builder(stream, grads, max_norm, workspace, norm_scale)?;
    let n = grads.len() as u32;
    let cfg = map_launch(n, step_elems([T::TYPE]));
    let args = [
        KernelArg::from(&mut *grads),
        KernelArg::from(&*norm_scale),
        KernelArg::from(n),
    ];
    let kernel = &APPLY[storage_index(T::TYPE)];
    stream.launch(kernel.artifacts(), cfg, &args)?;
    Ok(())
}

/// Blocks of the passes over `n` gradients: enough to fill the device, at most
/// [`WORKSPACE_LEN`]; a function of `n` only, so results do not depend on the device.
fn parts_for(n: u32, storage: FloatType) -> u32 {
    kernels::parts_for(n, storage.per_vector())
}
