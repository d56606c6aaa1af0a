//! Rotary position embeddings, forward and backward, NeoX (half-split) and interleaved
//! layouts, for f32 and bf16 storage.
//!
//! Theta is a parameter and positions are read from a device buffer (one per token), so a
//! captured graph replays with new positions after a copy into that buffer. Only the first
//! `rotary_dim` elements of each head rotate (partial rotary); the rest pass through.
//! Tensors are `tokens × heads × head_dim`, row-major.
//!
//! Angles are computed in f32 on the device (`position · 2^(i·exponent)` with `ex2.approx`,
//! then reduced to `[−π, π]`), so an angle carries about `position · 2.5 · 2⁻²⁴` radians of
//! error: a few times the rounding of the f32 product that f32 reference implementations
//! (Hugging Face, vLLM's cos/sin cache) already have.

mod kernel;
pub mod reference;
mod spec;

pub use spec::{Rope, RopeLayout};

use crate::cast::Element;
use crate::codegen::kernel_table;
use crate::codegen::tensor::Access;
use crate::{check_len, Error, OpKernel};
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};
use spec::RopeSpec;

kernel_table!(static ROPE = kernel::rope, RopeSpec::ALL, [0 1 2 3 4 5 6 7]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[
    &ROPE[0], &ROPE[1], &ROPE[2], &ROPE[3], &ROPE[4], &ROPE[5], &ROPE[6], &ROPE[7],
];

/// Threads per CTA.
const THREADS: u32 = 128;
/// The grid strides over tokens beyond this many CTAs.
const MAX_CTAS: u32 = 1 << 16;

/// Applies RoPE to `x` (`tokens × heads × head_dim`), writing `y`; token `t` rotates by
/// `positions[t]`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::rope::{rope, Rope, RopeLayout};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, 0.0, 7.0, 7.0])?; // 1 token, 1 head of 4
/// let positions = Buffer::from_host(&stream, &[2u32])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 4)?;
/// let spec = Rope { layout: RopeLayout::NeoX, theta: 10000.0, rotary_dim: 2 };
/// rope(&stream, &x, &positions, &mut y, 1, 1, 4, spec)?;
/// let y = y.to_host(&stream)?;
/// assert!((y[0] - 2f32.cos()).abs() < 1e-5 && (y[1] - 2f32.sin()).abs() < 1e-5);
/// assert_eq!(y[2..], [7.0, 7.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn rope<T: Element>(
    stream: &Stream,
    x: &Buffer<T>,
    positions: &Buffer<u32>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    spec: Rope,
) -> Result<(), Error> {
    launch(
        "rope",
        stream,
        x,
        positions,
        y,
        [tokens, heads, head_dim],
        spec,
        1.0,
    )
}

/// The gradient of [`rope`]: `dx` from `dy`, rotating back by the same angles.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::rope::{rope_backward, Rope, RopeLayout};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let dy = Buffer::from_host(&stream, &[1.0f32, 0.0])?;
/// let positions = Buffer::from_host(&stream, &[1u32])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, 2)?;
/// let spec = Rope { layout: RopeLayout::Interleaved, theta: 500000.0, rotary_dim: 2 };
/// rope_backward(&stream, &dy, &positions, &mut dx, 1, 1, 2, spec)?;
/// let dx = dx.to_host(&stream)?;
/// assert!((dx[1] + 1f32.sin()).abs() < 1e-5);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn rope_backward<T: Element>(
    stream: &Stream,
    dy: &Buffer<T>,
    positions: &Buffer<u32>,
    dx: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    spec: Rope,
) -> Result<(), Error> {
    launch(
        "rope_backward",
        stream,
        dy,
        positions,
        dx,
        [tokens, heads, head_dim],
        spec,
        -1.0,
    )
}

#[allow(clippy::too_many_arguments)]
fn launch<T: Element>(
    op: &'static str,
    stream: &Stream,
    x: &Buffer<T>,
    positions: &Buffer<u32>,
    y: &mut Buffer<T>,
    [tokens, heads, head_dim]: [usize; 3],
    rope: Rope,
    sign: f32,
) -> Result<(), Error> {
    rope.check(head_dim)?;
    let total = tokens
        .checked_mul(heads)
        .and_then(|n| n.checked_mul(head_dim))
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| Error::Unsupported {
            op,
            detail: format!(
                "tokens × heads × head_dim = {tokens} × {heads} × {head_dim} exceeds {} \
                 elements; split the batch",
                u32::MAX
            ),
        })?;
    let why = || format!("tokens × heads × head_dim = {tokens} × {heads} × {head_dim}");
    check_len(op, "x", x.len(), total, why)?;
    check_len(op, "y", y.len(), total, why)?;
    check_len(op, "positions", positions.len(), tokens, || {
        format!("one per token, tokens = {tokens}")
    })?;
    if total == 0 {
        return Ok(());
    }
    let half = rope.rotary_dim / 2;
    let width = Access::Vector.width(T::STORAGE) as usize;
    let span = match rope.layout {
        RopeLayout::NeoX => half,
        RopeLayout::Interleaved => rope.rotary_dim,
    };
    let access = if span % width == 0 && head_dim % width == 0 {
        Access::Vector
    } else {
        Access::Scalar
    };
    let spec = RopeSpec {
        storage: T::STORAGE,
        layout: rope.layout,
        access,
    };
    let chunks = (span / spec.elems() as usize) as u32;
    let bx = chunks.next_power_of_two().min(THREADS);
    let cfg = LaunchConfig {
        grid: [(tokens as u32).min(MAX_CTAS), 1, 1],
        block: [bx, THREADS / bx, 1],
        dynamic_shared_bytes: 0,
    };
    let args = [
        KernelArg::from(x),
        KernelArg::from(positions),
        KernelArg::from(&mut *y),
        KernelArg::from(tokens as u32),
        KernelArg::from(heads as u32),
        KernelArg::from(head_dim as u32),
        KernelArg::from(half as u32),
        KernelArg::from(chunks),
        KernelArg::from(rope.freq_exponent()),
        KernelArg::from(sign),
    ];
    stream.launch(ROPE[spec.index()].artifacts(), cfg, &args)?;
    Ok(())
}
