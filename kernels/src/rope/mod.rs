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

pub mod reference;
// `rotate_kernel`'s `#[device]` helper comes first: `append_kernel` and `staged_kernel` call
// it.
#[macro_use]
mod rotate_kernel;
mod append;
mod append_kernel;
mod spec;
mod staged_kernel;

pub use append::rope_append;
pub use spec::{Rope, RopeLayout};

use crate::op_kernel::kernel_refs;
use crate::rowwise::Access;
use crate::Float;
use crate::{check_len, Error, OpKernel};
use kernel_runtime::{Buffer, LaunchConfig, Stream};
use spec::RopeSpec;

static ROPE: [OpKernel; 8] = OpKernel::instances(rotate_kernel::ROPE_INSTANCES);
static ROPE_APPEND: [OpKernel; 12] = OpKernel::instances(append_kernel::ROPE_APPEND_INSTANCES);
static ROPE_STAGED: [OpKernel; 8] = OpKernel::instances(staged_kernel::ROPE_STAGED_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    ROPE[0 1 2 3 4 5 6 7],
    ROPE_APPEND[0 1 2 3 4 5 6 7 8 9 10 11],
    ROPE_STAGED[0 1 2 3 4 5 6 7],
];

/// Threads per CTA.
const THREADS: u32 = 128;
/// The staged kernel's grid strides over tokens beyond this many CTAs.
const MAX_CTAS: u32 = 1 << 16;
/// The largest token row (bytes) the staged kernel holds in shared memory; wider rows of
/// one-element accesses go through the per-item kernel.
const MAX_STAGED_ROW_BYTES: usize = 16 << 10;

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
pub fn rope<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    positions: &Buffer<u32>,
    y: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    spec: Rope,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("rope")?;
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
pub fn rope_backward<T: Float>(
    stream: &Stream,
    dy: &Buffer<T>,
    positions: &Buffer<u32>,
    dx: &mut Buffer<T>,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    spec: Rope,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("rope_backward")?;
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

/// A checked RoPE call: sizes as the kernels take them, and the access they use.
struct Plan {
    tokens: u32,
    heads: u32,
    head_dim: u32,
    /// `rotary_dim / 2`.
    half: u32,
    /// Accesses per head's rotary part (NeoX: per half).
    chunks: u32,
    /// The frequency exponent: `inv_freq(i) = 2^(i · exponent)`.
    exponent: f32,
    spec: RopeSpec,
}

impl Plan {
    /// Checks the spec and the buffers' lengths; `None` for an empty tensor.
    fn new<T: Float>(
        op: &'static str,
        [x, positions, y]: [usize; 3],
        [tokens, heads, head_dim]: [usize; 3],
        rope: Rope,
    ) -> Result<Option<Plan>, Error> {
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
        check_len(op, "x", x, total, why)?;
        check_len(op, "y", y, total, why)?;
        check_len(op, "positions", positions, tokens, || {
            format!("one per token, tokens = {tokens}")
        })?;
        if total == 0 {
            return Ok(None);
        }
        let half = rope.rotary_dim / 2;
        let width = Access::Vector.width(T::TYPE) as usize;
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
            storage: T::TYPE,
            layout: rope.layout,
            access,
        };
        Ok(Some(Plan {
            tokens: tokens as u32,
            heads: heads as u32,
            head_dim: head_dim as u32,
            half: half as u32,
            chunks: (span / spec.elems() as usize) as u32,
            exponent: rope.freq_exponent(),
            spec,
        }))
    }

    /// The `#[kernel]`'s launch: one thread per item (a chunk of a group of heads of a token;
    /// see `rotate_kernel`), 128 a CTA.
    fn launch(&self) -> LaunchConfig {
        let width = self.spec.access.width(self.spec.storage);
        let interleaved = self.spec.layout == RopeLayout::Interleaved;
        let held = rotate_kernel::held_heads(interleaved, width == 1);
        let used = self.chunks + (self.head_dim - 2 * self.half) / width;
        let per_group = if interleaved && width == 1 {
            used.next_multiple_of(32)
        } else {
            used
        };
        let items = self.tokens * self.heads.div_ceil(held) * per_group;
        LaunchConfig::linear(items.div_ceil(THREADS).min(i32::MAX as u32), THREADS)
    }
}

#[allow(clippy::too_many_arguments)]
fn launch<T: Float>(
    op: &'static str,
    stream: &Stream,
    x: &Buffer<T>,
    positions: &Buffer<u32>,
    y: &mut Buffer<T>,
    dims: [usize; 3],
    rope: Rope,
    sign: f32,
) -> Result<(), Error> {
    let lens = [x.len(), positions.len(), y.len()];
    let Some(p) = Plan::new::<T>(op, lens, dims, rope)? else {
        return Ok(());
    };
    let interleaved = p.spec.layout == RopeLayout::Interleaved;
    let width = p.spec.access.width(T::TYPE);
    let row_elems = p.heads as usize * p.head_dim as usize;
    let row_bytes = row_elems * T::TYPE.bytes();
    if width == 1 && row_bytes <= MAX_STAGED_ROW_BYTES {
        // Rows of whole 16-byte accesses when every token row starts aligned.
        let vec = Access::Vector.width(T::TYPE);
        let v = if row_elems.is_multiple_of(vec as usize) {
            vec
        } else {
            1
        };
        let cfg = LaunchConfig::linear(p.tokens.min(MAX_CTAS), THREADS)
            .with_dynamic_shared(row_bytes as u32);
        staged_kernel::rope_staged::<T>(
            stream,
            cfg,
            interleaved as u32,
            v,
            x,
            positions,
            y,
            p.tokens,
            p.heads,
            p.head_dim,
            p.half,
            p.exponent,
            sign,
        )?;
        return Ok(());
    }
    rotate_kernel::rope::<T>(
        stream,
        p.launch(),
        interleaved as u32,
        width,
        rotate_kernel::held_heads(interleaved, width == 1),
        x,
        positions,
        y,
        p.tokens,
        p.heads,
        p.head_dim,
        p.half,
        p.chunks,
        p.exponent,
        sign,
    )?;
    Ok(())
}
