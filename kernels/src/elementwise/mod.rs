//! Elementwise ops for f32 and bf16 storage: residual add, multiply, scale, SiLU and GELU
//! (tanh form) with their backward, and fused SwiGLU forward (`silu(gate)·up`) and backward
//! (both gradients in one pass). Each is one grid-stride kernel moving 16-byte vectors, with
//! a scalar loop for the last few elements.

pub(crate) mod launch;
mod map_kernel;
mod ops;
pub mod reference;

use crate::elementwise::launch::{map_launch, step_elems};
use crate::op_kernel::kernel_refs;
use crate::Float;
use crate::{check_len, Error, OpKernel};
use kernel_runtime::LaunchConfig;
use kernel_runtime::{Buffer, Stream};
use map_kernel as k;
#[doc(hidden)]
pub use ops::MapOp;
static MAP_UNARY: [OpKernel; 4] = OpKernel::instances(k::MAP_UNARY_INSTANCES);
static MAP_BINARY: [OpKernel; 10] = OpKernel::instances(k::MAP_BINARY_INSTANCES);
static SCALE: [OpKernel; 2] = OpKernel::instances(k::SCALE_INSTANCES);
static SWIGLU_BACKWARD: [OpKernel; 2] = OpKernel::instances(k::SWIGLU_BACKWARD_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    MAP_UNARY[0 1 2 3],
    MAP_BINARY[0 1 2 3 4 5 6 7 8 9],
    SCALE[0 1],
    SWIGLU_BACKWARD[0 1],
];

/// Checks every buffer against the first input's length: the element count and launch shape,
/// or `None` for an empty problem.
fn plan<T: Float>(
    op: MapOp,
    inputs: &[usize],
    outputs: &[usize],
) -> Result<Option<(u32, LaunchConfig)>, Error> {
    let name = op.name();
    let n = inputs[0];
    let first = op.inputs()[0];
    let lens = inputs.iter().zip(op.inputs());
    for (&len, buffer) in lens.chain(outputs.iter().zip(op.outputs())) {
        check_len(name, buffer, len, n, || format!("the length of `{first}`"))?;
    }
    let n32 = u32::try_from(n).map_err(|_| Error::Unsupported {
        op: name,
        detail: format!("{n} elements exceed {}; split the tensor", u32::MAX),
    })?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some((n32, map_launch(n32, step_elems([T::TYPE])))))
}

/// Runs `$launch` with `(n, cfg)` once the buffers' lengths check out.
macro_rules! planned {
    ($op:expr, [$($i:expr),*], [$($o:expr),*], |$n:ident, $cfg:ident| $launch:expr) => {{
        if let Some(($n, $cfg)) = plan::<T>($op, &[$($i.len()),*], &[$($o.len()),*])? {
            $launch?;
        }
        Ok(())
    }};
}

/// `out = a + b` (the residual add).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let a = Buffer::from_host(&stream, &[1.0f32, 2.0])?;
/// let b = Buffer::from_host(&stream, &[0.5f32, -2.0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::elementwise::add(&stream, &a, &b, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, vec![1.5, 0.0]);
/// # Ok(()) }
/// ```
pub fn add<T: Float>(
    stream: &Stream,
    a: &Buffer<T>,
    b: &Buffer<T>,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("add")?;
    planned!(
        MapOp::Add,
        [a, b],
        [out],
        |n, cfg| k::map_binary::<T, k::Add>(stream, cfg, a, b, out, n)
    )
}

/// `out = a · b`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let a = Buffer::from_host(&stream, &[3.0f32])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::elementwise::mul(&stream, &a, &a, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, vec![9.0]);
/// # Ok(()) }
/// ```
pub fn mul<T: Float>(
    stream: &Stream,
    a: &Buffer<T>,
    b: &Buffer<T>,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("mul")?;
    planned!(
        MapOp::Mul,
        [a, b],
        [out],
        |n, cfg| k::map_binary::<T, k::Mul>(stream, cfg, a, b, out, n)
    )
}

/// `out = s · x`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32, -4.0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::elementwise::scale(&stream, &x, 0.5, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, vec![0.5, -2.0]);
/// # Ok(()) }
/// ```
pub fn scale<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    s: f32,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("scale")?;
    planned!(MapOp::Scale, [x], [out], |n, cfg| k::scale::<T>(
        stream, cfg, x, out, s, n
    ))
}

/// `out = x · σ(x)`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[0.0f32, 20.0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::elementwise::silu(&stream, &x, &mut out)?;
/// let out = out.to_host(&stream)?;
/// assert!(out[0] == 0.0 && (out[1] - 20.0).abs() < 1e-4);
/// # Ok(()) }
/// ```
pub fn silu<T: Float>(stream: &Stream, x: &Buffer<T>, out: &mut Buffer<T>) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("silu")?;
    planned!(
        MapOp::Silu,
        [x],
        [out],
        |n, cfg| k::map_unary::<T, k::Silu>(stream, cfg, x, out, n)
    )
}

/// `dx = dy · d silu(x)/dx`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[0.0f32])?;
/// let dy = Buffer::from_host(&stream, &[2.0f32])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::elementwise::silu_backward(&stream, &x, &dy, &mut dx)?;
/// assert_eq!(dx.to_host(&stream)?, vec![1.0]);
/// # Ok(()) }
/// ```
pub fn silu_backward<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    dy: &Buffer<T>,
    dx: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("silu_backward")?;
    planned!(
        MapOp::SiluBackward,
        [x, dy],
        [dx],
        |n, cfg| k::map_binary::<T, k::SiluBackward>(stream, cfg, x, dy, dx, n)
    )
}

/// GELU, tanh form: `out = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[1.0f32])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::elementwise::gelu_tanh(&stream, &x, &mut out)?;
/// assert!((out.to_host(&stream)?[0] - 0.841192).abs() < 1e-5);
/// # Ok(()) }
/// ```
pub fn gelu_tanh<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gelu_tanh")?;
    planned!(MapOp::GeluTanh, [x], [out], |n, cfg| k::map_unary::<
        T,
        k::GeluTanh,
    >(
        stream, cfg, x, out, n
    ))
}

/// `dx = dy · d gelu_tanh(x)/dx`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x = Buffer::from_host(&stream, &[0.0f32])?;
/// let dy = Buffer::from_host(&stream, &[1.0f32])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::elementwise::gelu_tanh_backward(&stream, &x, &dy, &mut dx)?;
/// assert_eq!(dx.to_host(&stream)?, vec![0.5]);
/// # Ok(()) }
/// ```
pub fn gelu_tanh_backward<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    dy: &Buffer<T>,
    dx: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gelu_tanh_backward")?;
    planned!(MapOp::GeluTanhBackward, [x, dy], [dx], |n, cfg| {
        k::map_binary::<T, k::GeluTanhBackward>(stream, cfg, x, dy, dx, n)
    })
}

/// Fused SwiGLU: `out = silu(gate) · up`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let gate = Buffer::from_host(&stream, &[0.0f32, 30.0])?;
/// let up = Buffer::from_host(&stream, &[5.0f32, 2.0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2)?;
/// kernels::elementwise::swiglu(&stream, &gate, &up, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, vec![0.0, 60.0]);
/// # Ok(()) }
/// ```
pub fn swiglu<T: Float>(
    stream: &Stream,
    gate: &Buffer<T>,
    up: &Buffer<T>,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("swiglu")?;
    planned!(MapOp::Swiglu, [gate, up], [out], |n, cfg| k::map_binary::<
        T,
        k::Swiglu,
    >(
        stream, cfg, gate, up, out, n
    ))
}

/// Fused SwiGLU backward: from `dout`, both `dgate = dout·up·silu'(gate)` and
/// `dup = dout·silu(gate)` in one pass over the three inputs.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let gate = Buffer::from_host(&stream, &[0.0f32])?;
/// let up = Buffer::from_host(&stream, &[2.0f32])?;
/// let dout = Buffer::from_host(&stream, &[1.0f32])?;
/// let (mut dgate, mut dup) = (Buffer::<f32>::zeros(&stream, 1)?, Buffer::<f32>::zeros(&stream, 1)?);
/// kernels::elementwise::swiglu_backward(&stream, &gate, &up, &dout, &mut dgate, &mut dup)?;
/// assert_eq!((dgate.to_host(&stream)?, dup.to_host(&stream)?), (vec![1.0], vec![0.0]));
/// # Ok(()) }
/// ```
pub fn swiglu_backward<T: Float>(
    stream: &Stream,
    gate: &Buffer<T>,
    up: &Buffer<T>,
    dout: &Buffer<T>,
    dgate: &mut Buffer<T>,
    dup: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("swiglu_backward")?;
    planned!(
        MapOp::SwigluBackward,
        [gate, up, dout],
        [dgate, dup],
        |n, cfg| { k::swiglu_backward::<T>(stream, cfg, gate, up, dout, dgate, dup, n) }
    )
}
