//! The host entry points: check every buffer against the weights' shape, pick the instance,
//! launch.

use super::dequantize_kernel::{self, DEQUANTIZE_THREADS};
use super::gemv_kernel::{self, GEMV_ROWS_PER_BLOCK};
use super::GgufWeights;
use crate::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};
use std::ops::Range;

/// The most rows of `x` [`gemv`] takes; use [`prefill`] for more.
pub const GEMV_MAX_ROWS: usize = 16;

/// Index arithmetic in the kernels is 32-bit: refuses sizes past it.
fn check_u32(op: &'static str, what: &str, v: usize) -> Result<u32, Error> {
    u32::try_from(v).map_err(|_| Error::Unsupported {
        op,
        detail: format!("{what} = {v} does not fit 32-bit indexing; split the weight into parts of fewer than 2³² elements and bytes"),
    })
}

/// `rows × cols` and the bytes of the weights, checked to fit the kernels' indexing.
pub(super) fn sizes(op: &'static str, w: &GgufWeights) -> Result<(u32, u32, u32), Error> {
    check_u32(op, "the weight's bytes", w.quantized_bytes())?;
    check_u32(op, "rows × cols", w.rows() * w.cols())?;
    Ok((
        w.rows() as u32,
        w.cols() as u32,
        w.format().row_bytes(w.cols()) as u32,
    ))
}

/// A decode product's batch: `m` at most [`GEMV_MAX_ROWS`], `x` of `m × cols` elements and `y`
/// of `m × rows`.
pub(super) fn check_batch(
    op: &'static str,
    w: &GgufWeights,
    x_len: usize,
    y_len: usize,
    m: usize,
) -> Result<(), Error> {
    check_input(op, w, x_len, m)?;
    check_len(op, "y", y_len, m * w.rows(), || {
        format!("m × rows = {m} × {}", w.rows())
    })
}

/// A decode product's input: `m` at most [`GEMV_MAX_ROWS`] and `x` of `m × cols` elements (the
/// outputs are the caller's to check where they are not one `m × rows` buffer).
pub(super) fn check_input(
    op: &'static str,
    w: &GgufWeights,
    x_len: usize,
    m: usize,
) -> Result<(), Error> {
    if m > GEMV_MAX_ROWS {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "m = {m} rows of x, but the GEMV takes at most {GEMV_MAX_ROWS}; call gguf::prefill for more"
            ),
        });
    }
    check_len(op, "x", x_len, m * w.cols(), || {
        format!("m × cols = {m} × {}", w.cols())
    })
}

/// Writes the weights of `w` to `out` (`rows × cols`, row-major) as `T`: the values ggml's
/// reference dequantizers give, bit for bit, rounded to nearest even for bf16.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{dequantize, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w: Vec<f32> = (0..256).map(|i| (i % 9) as f32 * 0.25).collect();
/// let q = GgufMatrix::quantize(GgufFormat::Q4K, 1, 256, &w)?;
/// let mut out = Buffer::<f32>::zeros(&stream, 256)?;
/// dequantize(&stream, &q.to_device(&stream)?, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, q.dequantize());
/// # Ok(()) }
/// ```
pub fn dequantize<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    dequantize_rows(stream, w, 0..w.rows(), out)
}

/// [`dequantize`] of the rows `rows` of `w` only, into `out` (`rows.len() × cols`): one part
/// of a stacked weight ([`GgufMatrix::stack`](super::GgufMatrix::stack)).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{dequantize_rows, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w: Vec<f32> = (0..3 * 256).map(|i| (i / 256) as f32).collect();
/// let q = GgufMatrix::quantize(GgufFormat::Q6K, 3, 256, &w)?;
/// let mut out = Buffer::<f32>::zeros(&stream, 2 * 256)?;
/// dequantize_rows(&stream, &q.to_device(&stream)?, 1..3, &mut out)?;
/// assert_eq!(out.to_host(&stream)?, q.dequantize()[256..].to_vec());
/// # Ok(()) }
/// ```
pub fn dequantize_rows<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    rows: Range<usize>,
    out: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("dequantize")?;
    const OP: &str = "gguf::dequantize";
    let (_, cols, row_bytes) = sizes(OP, w)?;
    if rows.start > rows.end || rows.end > w.rows() {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "rows {rows:?} of a weight of {} rows: give a range inside 0..{}",
                w.rows(),
                w.rows()
            ),
        });
    }
    let n = rows.len();
    check_len(OP, "out", out.len(), n * w.cols(), || {
        format!("rows × cols = {n} × {}", w.cols())
    })?;
    // `n × cols` fits a u32: `sizes` checked the whole weight's.
    let chunks = (n * (w.cols() / 32)) as u32;
    if chunks == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig::linear(chunks.div_ceil(DEQUANTIZE_THREADS), DEQUANTIZE_THREADS);
    dequantize_kernel::gguf_dequantize::<T>(
        stream,
        cfg,
        w.format().code(),
        w.words(),
        out,
        rows.start as u32,
        n as u32,
        cols,
        row_bytes,
    )?;
    Ok(())
}

/// `y = x·Wᵀ` for the `m` rows of `x` (`m × cols`), `W` the `rows × cols` weights of `w`, `y`
/// `m × rows`; f32 accumulation, rounded to `T` once. `m` is 1 to [`GEMV_MAX_ROWS`] (0 does
/// nothing); every weight byte is read once for all `m` rows. The same inputs give the same
/// bits on every run.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w = vec![0.5f32; 3 * 256];
/// let weights = GgufMatrix::quantize(GgufFormat::Q6K, 3, 256, &w)?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &vec![2.0f32; 2 * 256])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2 * 3)?;
/// gemv(&stream, &weights, &x, &mut y, 2)?;
/// assert_eq!(y.to_host(&stream)?, vec![256.0; 6]);
/// # Ok(()) }
/// ```
pub fn gemv<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv")?;
    launch_gemv("gguf::gemv", stream, w, x, None, y, m)
}

/// `y = rmsnorm(x)·Wᵀ`, the first projection of a block: [`gemv`] of
/// `x · γ / sqrt(mean(x²) + eps)` (each row of `x` normalized over its `cols` elements,
/// `gamma` the norm weight of `cols` elements), without writing the normalized `x`. The norm
/// is applied in f32 as `y = (Σ x·(γ·w)) / sqrt(mean(x²) + eps)`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_rms_norm, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // A block of 127s has scale 1: Q8_0 stores it exactly.
/// let weights = GgufMatrix::quantize(GgufFormat::Q8_0, 1, 32, &[127.0f32; 32])?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &[3.0f32; 32])?; // normalizes to all ones
/// let gamma = Buffer::from_host(&stream, &[0.5f32; 32])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 1)?;
/// gemv_rms_norm(&stream, &weights, &x, &gamma, 0.0, &mut y, 1)?;
/// assert!((y.to_host(&stream)?[0] - 32.0 * 0.5 * 127.0).abs() < 1e-3);
/// # Ok(()) }
/// ```
pub fn gemv_rms_norm<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    gamma: &Buffer<T>,
    eps: f32,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_rms_norm")?;
    launch_gemv(
        "gguf::gemv_rms_norm",
        stream,
        w,
        x,
        Some((gamma, eps)),
        y,
        m,
    )
}

fn launch_gemv<T: Float>(
    op: &'static str,
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    norm: Option<(&Buffer<T>, f32)>,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    let (n, k, row_bytes) = sizes(op, w)?;
    check_batch(op, w, x.len(), y.len(), m)?;
    if let Some((gamma, _)) = norm {
        check_len(op, "gamma", gamma.len(), w.cols(), || {
            "one per column of the weight".into()
        })?;
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let mt = match m {
        1 => 1,
        2..=4 => 4,
        _ => 16,
    };
    let (gamma, eps, with_norm) = match norm {
        Some((g, eps)) => (g, eps, 1),
        None => (x, 0.0, 0),
    };
    let cfg = LaunchConfig::linear(n.div_ceil(GEMV_ROWS_PER_BLOCK), 32 * GEMV_ROWS_PER_BLOCK);
    gemv_kernel::gguf_gemv::<T>(
        stream,
        cfg,
        w.format().code(),
        mt,
        with_norm,
        crate::quant::loads_in_flight(mt),
        w.words(),
        x,
        gamma,
        y,
        m as u32,
        n,
        k,
        row_bytes,
        eps,
    )?;
    Ok(())
}

/// Elements of the workspace [`prefill`] takes for `w`: its `rows × cols` weights.
///
/// ```
/// use kernels::quant::gguf::{prefill_workspace_len, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = kernel_runtime::Device::emulator().stream()?;
/// let w = GgufMatrix::quantize(GgufFormat::Q8_0, 2, 32, &[1.0; 64])?.to_device(&stream)?;
/// assert_eq!(prefill_workspace_len(&w), 64);
/// # Ok(()) }
/// ```
pub fn prefill_workspace_len(w: &GgufWeights) -> usize {
    w.rows() * w.cols()
}

/// `y = x·Wᵀ` for any number `m` of rows of `x` (the prefill): dequantizes `W` into
/// `workspace` (its [`prefill_workspace_len`] elements, overwritten) as `T`, then runs the
/// library's [`gemm`] on it (tensor cores for bf16, fp32 SIMT for f32).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{prefill, prefill_workspace_len, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // Blocks of 127s have scale 1: Q8_0 stores them exactly.
/// let w = GgufMatrix::quantize(GgufFormat::Q8_0, 2, 32, &[127.0; 64])?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &[0.5f32; 3 * 32])?;
/// let mut ws = Buffer::<f32>::zeros(&stream, prefill_workspace_len(&w))?;
/// let mut y = Buffer::<f32>::zeros(&stream, 3 * 2)?;
/// prefill(&stream, &w, &x, &mut y, 3, &mut ws)?;
/// assert_eq!(y.to_host(&stream)?, vec![32.0 * 0.5 * 127.0; 6]);
/// # Ok(()) }
/// ```
pub fn prefill<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    m: usize,
    workspace: &mut Buffer<T>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("prefill")?;
    const OP: &str = "gguf::prefill";
    sizes(OP, w)?;
    check_len(OP, "x", x.len(), m * w.cols(), || {
        format!("m × cols = {m} × {}", w.cols())
    })?;
    check_len(OP, "y", y.len(), m * w.rows(), || {
        format!("m × rows = {m} × {}", w.rows())
    })?;
    check_len(
        OP,
        "workspace",
        workspace.len(),
        prefill_workspace_len(w),
        || "from gguf::prefill_workspace_len".into(),
    )?;
    if m == 0 || w.rows() == 0 {
        return Ok(());
    }
    dequantize(stream, w, workspace)?;
    let shape = GemmShape::new(Layout::Nt, m, w.rows(), w.cols());
    gemm(
        stream,
        &shape,
        x,
        workspace,
        y,
        &Epilogue::default(),
        Math::Fp32,
    )
}
