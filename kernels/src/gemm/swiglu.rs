//! The SwiGLU projection of a gated MLP as one op: `out = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)`.
//!
//! On sm_90 with 16-bit inputs and 16-byte rows this is one launch of the TMA GEMM's SwiGLU
//! instances ([`tma_wgmma_kernel`](super::tma_wgmma_kernel), `GLU = 1`): each tile copies 128
//! rows of each weight beside each other, so `x` is read once for both products and neither
//! product is written out. Elsewhere it is two [`gemm`] calls into temporaries and
//! [`crate::elementwise::swiglu`].

use super::epilogue::Epilogue;
use super::layout::GemmShape;
use super::ops::{gemm, output_store_flags};
use super::select::Math;
use super::tma_wgmma::{k_major_map, persistent_config};
use super::tma_wgmma_kernel::{gemm_tma_wgmma, TILE_M, TILE_N};
use super::Layout;
use crate::{check_len, Error, Float, FloatType};
use kernel_runtime::{Buffer, Stream};

const OP: &str = "gemm_swiglu";

/// Output columns of one fused tile: half of the kernel's 256, the other half the up rows.
const GLU_TILE_N: u32 = TILE_N / 2;

/// `out = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)` for row-major `x` (`m × k`), `w_gate` and `w_up`
/// (`n × k` each, as a linear layer stores its weight) and `out` (`m × n`), accumulating in
/// f32 and rounding once to `T` on store.
///
/// bf16 and f16 on an sm_90 device (or the sm_90a emulator) with `k` a multiple of 8 run
/// fused; f32 and bf16 run everywhere through two GEMMs and the elementwise SwiGLU (which
/// allocate two `m × n` temporaries, so not inside a graph capture, and round each product to
/// `T` before the SwiGLU). Buffers that do not match
/// the shape, and `k = 0`, are errors before anything runs.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let (m, n, k) = (2, 3, 8);
/// let x = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.25); m * k])?;
/// let gate = Buffer::from_host(&stream, &vec![Bf16::from_f32(1.0); n * k])?;
/// let up = Buffer::from_host(&stream, &vec![Bf16::from_f32(-1.0); n * k])?;
/// let mut out = Buffer::<Bf16>::zeros(&stream, m * n)?;
/// kernels::gemm::gemm_swiglu(&stream, &x, &gate, &up, &mut out, m, n, k)?;
/// // gate = 2, up = −2: silu(2)·(−2) = −2·2·σ(2) ≈ −3.52
/// let got = out.to_host(&stream)?[0].to_f32();
/// assert!((got + 3.523).abs() < 0.02, "{got}");
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_swiglu<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w_gate: &Buffer<T>,
    w_up: &Buffer<T>,
    out: &mut Buffer<T>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    check_len(OP, "x", x.len(), m * k, || format!("m × k = {m} × {k}"))?;
    check_len(OP, "w_gate", w_gate.len(), n * k, || {
        format!("n × k = {n} × {k}")
    })?;
    check_len(OP, "w_up", w_up.len(), n * k, || {
        format!("n × k = {n} × {k}")
    })?;
    check_len(OP, "out", out.len(), m * n, || format!("m × n = {m} × {n}"))?;
    if k == 0 {
        return Err(Error::Unsupported {
            op: OP,
            detail: "k = 0 leaves silu(0)·0 = 0 in every output: fill `out` with zeros instead"
                .into(),
        });
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if m.checked_mul(n).is_none_or(|e| e >= 1 << 32) || k >= 1 << 32 {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("{m} × {n} × {k} outgrows the kernels' 32-bit indices: split the rows"),
        });
    }
    if fuses::<T>(stream, k) {
        return fused(stream, x, w_gate, w_up, out, [m, n, k].map(|d| d as u32));
    }
    unfused(stream, x, w_gate, w_up, out, m, n, k)
}

/// The fused kernel runs on Hopper for 16-bit inputs whose rows the copy engine can address.
fn fuses<T: Float>(stream: &Stream, k: usize) -> bool {
    stream.device().target().sm() == 90 && T::TYPE != FloatType::F32 && k.is_multiple_of(8)
}

fn fused<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w_gate: &Buffer<T>,
    w_up: &Buffer<T>,
    out: &mut Buffer<T>,
    [m, n, k]: [u32; 3],
) -> Result<(), Error> {
    let map_x = k_major_map(x, m, k, TILE_M)?;
    let map_gate = k_major_map(w_gate, n, k, GLU_TILE_N)?;
    let map_up = k_major_map(w_up, n, k, GLU_TILE_N)?;
    let config = persistent_config(stream, m.div_ceil(TILE_M) * n.div_ceil(GLU_TILE_N));
    let dense = GemmShape::new(Layout::Nt, m as usize, n as usize, k as usize);
    let flags = output_store_flags(&dense, false);
    let half = (T::TYPE == FloatType::F16) as u32;
    let (a_k, b_k, split, glu) = (1, 1, 0, 1);
    // The epilogue's f32 copy, bias and residual are not touched by these instances; `x`
    // stands in.
    let mut no_copy = x.unused_output::<f32>();
    gemm_tma_wgmma::<T, T>(
        stream,
        config,
        half,
        a_k,
        b_k,
        split,
        glu,
        &map_x,
        &map_gate,
        &map_up,
        out,
        &mut no_copy,
        &mut x.unused_output::<f32>(),
        &mut x.unused_output::<u32>(),
        x,
        x,
        m,
        n,
        k,
        n,
        0,
        1.0,
        0.0,
        flags,
        1,
    )?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn unfused<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w_gate: &Buffer<T>,
    w_up: &Buffer<T>,
    out: &mut Buffer<T>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    if T::TYPE == FloatType::F16 {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "f16 SwiGLU runs fused on sm_90 with k a multiple of 8 only (this is {} with k = {k}); use bf16 or f32",
                stream.device().target().name()
            ),
        });
    }
    if stream.is_capturing() {
        return Err(Error::Unsupported {
            op: OP,
            detail: "the unfused form allocates its two products, which a graph capture cannot: run it outside the capture".into(),
        });
    }
    let shape = GemmShape::new(Layout::Nt, m, n, k);
    let plain = Epilogue::default();
    let mut gate = Buffer::<T>::zeros(stream, m * n)?;
    let mut up = Buffer::<T>::zeros(stream, m * n)?;
    gemm(stream, &shape, x, w_gate, &mut gate, &plain, Math::Fp32)?;
    gemm(stream, &shape, x, w_up, &mut up, &plain, Math::Fp32)?;
    crate::elementwise::swiglu(stream, &gate, &up, out)
}
