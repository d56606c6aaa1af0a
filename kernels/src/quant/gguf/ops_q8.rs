//! The host entry points of the int8 route: quantize the activations (optionally behind
//! RMSNorm), then the `dp4a` GEMV. Every buffer is checked before anything launches.

use super::activations::QuantizedActivations;
use super::gemv_q8_kernel::{self, GEMV_Q8_ROWS_PER_BLOCK};
use super::gemv_q8_mma_kernel::{self, GEMV_Q8_MMA_THREADS, GEMV_Q8_MMA_X_STAGE_WORDS};
use super::ops::GEMV_MAX_ROWS;
use super::quantize_activations_kernel::{self, QUANTIZE_THREADS};
use super::{GgufFormat, GgufWeights};
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Quantizes the `m` rows of `x` (`m × xq.cols()`) into the first `m` rows of `xq`, as
/// [`QuantizedActivations`] defines; `m ≤ xq.rows()`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{quantize_activations, reference, QuantizedActivations};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x: Vec<f32> = (0..2 * 256).map(|i| ((i * 7) % 19) as f32 - 9.0).collect();
/// let mut xq = QuantizedActivations::new(&stream, 2, 256)?;
/// quantize_activations(&stream, &Buffer::from_host(&stream, &x)?, &mut xq, 2)?;
/// assert_eq!(xq.to_host(&stream)?, reference::quantize_activations(&x, 2, 256));
/// # Ok(()) }
/// ```
pub fn quantize_activations<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    xq: &mut QuantizedActivations,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("quantize_activations")?;
    launch_quantize("gguf::quantize_activations", stream, x, None, xq, m)
}

/// [`quantize_activations`] of `rmsnorm(x)`: each row `x · rstd · γ` in f32, with
/// `rstd = 1 / sqrt(mean(x²) + eps)` over its `cols` elements and `gamma` the norm weight of
/// `cols` elements; the normalized `x` is never written. The first projection of a block on
/// the int8 route (the f32 route's is [`gemv_rms_norm`](super::gemv_rms_norm)).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{quantize_activations_rms_norm, reference, QuantizedActivations};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let x: Vec<f32> = (0..256).map(|i| (i % 13) as f32 - 6.0).collect();
/// let gamma: Vec<f32> = (0..256).map(|i| 0.5 + (i % 3) as f32 * 0.25).collect();
/// let mut xq = QuantizedActivations::new(&stream, 1, 256)?;
/// let (dx, dg) = (Buffer::from_host(&stream, &x)?, Buffer::from_host(&stream, &gamma)?);
/// quantize_activations_rms_norm(&stream, &dx, &dg, 1e-5, &mut xq, 1)?;
/// let want = reference::quantize_activations_rms_norm(&x, &gamma, 1e-5, 1, 256);
/// assert_eq!(xq.to_host(&stream)?, want);
/// # Ok(()) }
/// ```
pub fn quantize_activations_rms_norm<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    eps: f32,
    xq: &mut QuantizedActivations,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("quantize_activations_rms_norm")?;
    launch_quantize(
        "gguf::quantize_activations_rms_norm",
        stream,
        x,
        Some((gamma, eps)),
        xq,
        m,
    )
}

fn launch_quantize<T: Float>(
    op: &'static str,
    stream: &Stream,
    x: &Buffer<T>,
    norm: Option<(&Buffer<T>, f32)>,
    xq: &mut QuantizedActivations,
    m: usize,
) -> Result<(), Error> {
    let k = xq.cols();
    if m > xq.rows() {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "m = {m} rows, but the workspace holds {}; make it with QuantizedActivations::new for at least {m} rows",
                xq.rows()
            ),
        });
    }
    check_len(op, "x", x.len(), m * k, || format!("m × cols = {m} × {k}"))?;
    if let Some((gamma, _)) = norm {
        check_len(op, "gamma", gamma.len(), k, || {
            "one per column of the activations".into()
        })?;
    }
    if m == 0 || k == 0 {
        return Ok(());
    }
    let (gamma, eps, with_norm) = match norm {
        Some((g, eps)) => (g, eps, 1),
        None => (x, 0.0, 0),
    };
    let (values, scales) = xq.values_mut();
    quantize_activations_kernel::gguf_quantize_activations::<T>(
        stream,
        LaunchConfig::linear(m as u32, QUANTIZE_THREADS),
        with_norm,
        x,
        gamma,
        values,
        scales,
        k as u32,
        eps,
    )?;
    Ok(())
}

/// `y = x·Wᵀ` for the `m` rows of `x` held int8 in `xq` (from [`quantize_activations`]), `W`
/// the `rows × cols` weights of `w`, `y` `m × rows` as f32 or bf16. Integer `dp4a` dot
/// products over each run of 32 (16 for Q6_K) weights, exact, then the scales in f32; so `y`
/// is the product of the dequantized weights with the dequantized int8 `x`, up to f32
/// rounding of the scale products. `m` is 1 to [`GEMV_MAX_ROWS`] (0 does nothing) and at
/// most `xq.rows()`; every weight byte is read once for all `m` rows; reruns give the same
/// bits.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_q8, quantize_activations, GgufFormat, GgufMatrix, QuantizedActivations};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // Blocks of 127s have scale 1: Q8_0 stores them exactly, and so does the int8 x of 1s.
/// let w = GgufMatrix::quantize(GgufFormat::Q8_0, 3, 256, &[127.0; 3 * 256])?.to_device(&stream)?;
/// let mut xq = QuantizedActivations::new(&stream, 1, 256)?;
/// quantize_activations(&stream, &Buffer::from_host(&stream, &[1.0f32; 256])?, &mut xq, 1)?;
/// let mut y = Buffer::<f32>::zeros(&stream, 3)?;
/// gemv_q8(&stream, &w, &xq, &mut y, 1)?;
/// assert_eq!(y.to_host(&stream)?, vec![256.0 * 127.0; 3]);
/// # Ok(()) }
/// ```
pub fn gemv_q8<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    xq: &QuantizedActivations,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_q8")?;
    const OP: &str = "gguf::gemv_q8";
    let Some((n, k, row_bytes)) = check_product(OP, w, xq, y.len(), m)? else {
        return Ok(());
    };
    let mt = match m {
        1 => 1,
        2..=4 => 4,
        _ => 16,
    };
    let (values, scales) = xq.values();
    let cfg = LaunchConfig::linear(
        n.div_ceil(GEMV_Q8_ROWS_PER_BLOCK),
        32 * GEMV_Q8_ROWS_PER_BLOCK,
    );
    gemv_q8_kernel::gguf_gemv_q8::<T>(
        stream,
        cfg,
        w.format().code(),
        mt,
        crate::quant::loads_in_flight(mt),
        w.words(),
        values,
        scales,
        y,
        m as u32,
        n,
        k,
        row_bytes,
    )?;
    Ok(())
}

/// [`gemv_q8`] on the integer tensor cores (`mma.sync` over int8, sm_80+): 16 weight rows a
/// block, each group of 32 weights one product per 8 rows of `x` (Q6_K, whose scales cover
/// runs of 16, one a run), its exact `i32` sums then scaled in f32. The same model as
/// [`gemv_q8`] (the product of the dequantized weights with the dequantized int8 `x`, up to
/// f32 rounding of the scales), in its own fixed order: reruns give the same bits. From 8
/// rows of `x` (9 for Q6_K) each warp stages its next block of them in shared memory
/// ([`gemv_q8_mma_with`]), which gives the same bits.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_q8_mma, quantize_activations, GgufFormat, GgufMatrix, QuantizedActivations};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // Blocks of 127s have scale 1: Q8_0 stores them exactly, and so does the int8 x of 1s.
/// let w = GgufMatrix::quantize(GgufFormat::Q8_0, 3, 256, &[127.0; 3 * 256])?.to_device(&stream)?;
/// let mut xq = QuantizedActivations::new(&stream, 2, 256)?;
/// quantize_activations(&stream, &Buffer::from_host(&stream, &[1.0f32; 2 * 256])?, &mut xq, 2)?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2 * 3)?;
/// gemv_q8_mma(&stream, &w, &xq, &mut y, 2)?;
/// assert_eq!(y.to_host(&stream)?, vec![256.0 * 127.0; 2 * 3]);
/// # Ok(()) }
/// ```
pub fn gemv_q8_mma<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    xq: &QuantizedActivations,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    gemv_q8_mma_with(stream, w, xq, y, m, stages_x(w.format(), m))
}

/// Whether [`gemv_q8_mma`] stages the activations in shared memory: from 8 rows of `x`, or 9
/// for Q6_K (whose two products a group at 8 rows keep the direct form ahead). Below that a
/// group's activation load is a broadcast over a few rows, which staging only delays.
fn stages_x(format: GgufFormat, m: usize) -> bool {
    m > 8 || (m == 8 && format != GgufFormat::Q6K)
}

/// [`gemv_q8_mma`], with the activations read straight from global memory
/// (`staged_x = false`, what [`gemv_q8_mma`] does for a few rows of `x`) or each warp's next
/// block of them copied into shared memory by `cp.async` while it works on the current one
/// (`staged_x = true`: a group's activation operand is then one conflict-free shared load, not
/// a global load over 8 rows, which from `m = 8` keeps the L1 pipe from being the limit;
/// BENCHMARKS.md has the figures). Both give the same bits.
pub fn gemv_q8_mma_with<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    xq: &QuantizedActivations,
    y: &mut Buffer<T>,
    m: usize,
    staged_x: bool,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_q8_mma")?;
    const OP: &str = "gguf::gemv_q8_mma";
    let Some((n, k, row_bytes)) = check_product(OP, w, xq, y.len(), m)? else {
        return Ok(());
    };
    let (values, scales) = xq.values();
    let nx = if m > 8 { 2 } else { 1 };
    let mut cfg = LaunchConfig::linear(n.div_ceil(16), GEMV_Q8_MMA_THREADS);
    // Eight warps, two stages each; the kernel declares the buffer either way.
    cfg.dynamic_shared_bytes = if staged_x {
        8 * 2 * GEMV_Q8_MMA_X_STAGE_WORDS * nx * 4
    } else {
        16
    };
    gemv_q8_mma_kernel::gguf_gemv_q8_mma::<T>(
        stream,
        cfg,
        w.format().code(),
        nx,
        staged_x as u32,
        w.words(),
        values,
        scales,
        y,
        m as u32,
        n,
        k,
        row_bytes,
    )?;
    Ok(())
}

/// Checks a product of the int8 route; `None` where there is nothing to compute.
fn check_product(
    op: &'static str,
    w: &GgufWeights,
    xq: &QuantizedActivations,
    y_len: usize,
    m: usize,
) -> Result<Option<(u32, u32, u32)>, Error> {
    let (n, k, row_bytes) = super::ops::sizes(op, w)?;
    if xq.cols() != w.cols() {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "the activations have {} columns but the weight {}; quantize rows of the weight's cols",
                xq.cols(),
                w.cols()
            ),
        });
    }
    if m > GEMV_MAX_ROWS || m > xq.rows() {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "m = {m} rows of x, but the GEMV takes at most {GEMV_MAX_ROWS} and the activations hold {}; call gguf::prefill for more",
                xq.rows()
            ),
        });
    }
    check_len(op, "y", y_len, m * w.rows(), || {
        format!("m × rows = {m} × {}", w.rows())
    })?;
    if m == 0 || n == 0 {
        return Ok(None);
    }
    Ok(Some((n, k, row_bytes)))
}
