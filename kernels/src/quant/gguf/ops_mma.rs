//! The host entry point of the tensor-core GEMV: shapes checked before launch, the
//! activations passed as words.

use super::gemv_mma_kernel::{self, GEMV_MMA_THREADS};
use super::{GgufFormat, GgufWeights};
use crate::Error;
use crate::{Float, FloatType};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// `y = x·Wᵀ` for the `m` rows of `x` (`m × cols`), `W` the `rows × cols` Q8_0, Q4_K or
/// Q6_K weights of `w` (for Q8_0, `cols` a multiple of 256), `y` `m × rows`, on the tensor
/// cores (`mma.sync`, sm_80+): the decode product of a batch of sequences. Each weight is
/// decoded in registers to bf16 with one rounding from bf16 scales
/// ([`GgufMatrix::bf16_operand`](super::GgufMatrix::bf16_operand) gives the same values):
/// Q8_0's `q·d` with `d` rounded to bf16; Q4_K's `u·a − b`, with the sub-block scale
/// `a = scale·d` and offset `b = min·dmin` each rounded to bf16 from `d` and `dmin` rounded
/// to bf16; Q6_K's `a·(q − 32)` with `a = d·scale` rounded to bf16 from `d` rounded to
/// bf16. `x` is taken as bf16 (f32 rows rounded to nearest even), products
/// are summed in f32 and `y` rounded to `T` once. `m` is 1 to
/// [`GEMV_MAX_ROWS`](super::GEMV_MAX_ROWS) (0 does nothing); every weight byte is read once
/// for all `m` rows, and reruns give the same bits. The tensor core works on 8 or 16 rows of
/// `x` whatever `m` is, so the time hardly depends on `m`.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_mma, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // Weights of 0 and 1 only: Q4_K stores them exactly, and bf16 holds every product.
/// let w: Vec<f32> = (0..3 * 256).map(|i| (i % 2) as f32).collect();
/// let weights = GgufMatrix::quantize(GgufFormat::Q4K, 3, 256, &w)?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &vec![2.0f32; 4 * 256])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 4 * 3)?;
/// gemv_mma(&stream, &weights, &x, &mut y, 4)?;
/// assert_eq!(y.to_host(&stream)?, vec![256.0; 12]);
/// # Ok(()) }
/// ```
pub fn gemv_mma<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    let sms = stream.device().props().sm_count as usize;
    let plan = GemvMmaPlan::for_weight::<T>(w.format(), w.rows(), sms);
    gemv_mma_with(stream, w, x, y, m, plan)
}

/// How [`gemv_mma_with`] splits the work: the tiles of 8 weight rows a warp takes, 1 or 2.
/// Two make the weights the tensor core's 16-row operand, so the activations need no
/// rearranging and rows of `x` past 8 cost a product only when present; one makes twice the
/// blocks (the rows of `x` are then the 16-row operand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemvMmaPlan {
    pub tiles: usize,
}

impl GemvMmaPlan {
    /// The plan [`gemv_mma`] takes for a weight of `rows` rows on `sms` SMs: two tiles a warp
    /// where that still gives every SM a block, else one.
    ///
    /// ```
    /// use kernels::quant::gguf::GemvMmaPlan;
    /// assert_eq!(GemvMmaPlan::for_rows(4096, 132).tiles, 2);
    /// assert_eq!(GemvMmaPlan::for_rows(1024, 132).tiles, 1);
    /// ```
    pub fn for_rows(rows: usize, sms: usize) -> GemvMmaPlan {
        let tiles = if rows.div_ceil(16) >= sms { 2 } else { 1 };
        GemvMmaPlan { tiles }
    }

    /// The plan [`gemv_mma`] takes for a weight of `format` and `rows` rows with activations
    /// of `T`: [`for_rows`](Self::for_rows), except that Q8_0, and Q6_K with f32
    /// activations, take one tile, the only plan they have (two would hold more words than a
    /// thread's registers).
    ///
    /// ```
    /// use kernels::quant::gguf::{GemvMmaPlan, GgufFormat};
    /// use kernel_runtime::Bf16;
    /// assert_eq!(GemvMmaPlan::for_weight::<Bf16>(GgufFormat::Q6K, 4096, 132).tiles, 2);
    /// assert_eq!(GemvMmaPlan::for_weight::<f32>(GgufFormat::Q6K, 4096, 132).tiles, 1);
    /// assert_eq!(GemvMmaPlan::for_weight::<Bf16>(GgufFormat::Q8_0, 4096, 132).tiles, 1);
    /// ```
    pub fn for_weight<T: Float>(format: GgufFormat, rows: usize, sms: usize) -> GemvMmaPlan {
        if one_tile_only::<T>(format) {
            return GemvMmaPlan { tiles: 1 };
        }
        GemvMmaPlan::for_rows(rows, sms)
    }
}

/// Whether a weight of `format` with activations of `T` has only the one-tile kernel: the
/// words of two tiles' next blocks would not fit a thread's registers.
fn one_tile_only<T: Float>(format: GgufFormat) -> bool {
    format == GgufFormat::Q8_0 || (format == GgufFormat::Q6K && T::TYPE == FloatType::F32)
}

/// Whether [`gemv_mma`] reads `w` on the device of `stream` (sm_80 or newer; Q8_0 rows in
/// whole units of 256): callers that pick a GEMV per weight ask this rather than repeat its
/// rules.
///
/// ```
/// use kernel_runtime::Device;
/// use kernels::quant::gguf::{gemv_mma_reads, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm80).stream()?;
/// let q8 = |cols| GgufMatrix::quantize(GgufFormat::Q8_0, 1, cols, &vec![1.0; cols]);
/// assert!(gemv_mma_reads(&stream, &q8(512)?.to_device(&stream)?));
/// assert!(!gemv_mma_reads(&stream, &q8(288)?.to_device(&stream)?));
/// # Ok(()) }
/// ```
pub fn gemv_mma_reads(stream: &Stream, w: &GgufWeights) -> bool {
    unread(stream, w).is_none()
}

/// Why [`gemv_mma`] cannot read `w` on the device of `stream`, if it cannot.
fn unread(stream: &Stream, w: &GgufWeights) -> Option<String> {
    let sm = stream.device().target().sm();
    if sm < 80 {
        return Some(format!(
            "the device is sm_{sm}, and mma.sync bf16 needs sm_80 or newer; call gguf::gemv"
        ));
    }
    let k = w.cols();
    if w.format() == GgufFormat::Q8_0 && !k.is_multiple_of(256) {
        return Some(format!(
            "the q8_0 weight's rows are {k} weights, and the tensor-core GEMV reads q8_0 rows in units of 256; call gguf::gemv or gguf::gemv_q8 for it"
        ));
    }
    None
}

/// [`gemv_mma`] with the caller's [`GemvMmaPlan`]: for tuning, and for benchmarks that
/// compare plans.
pub fn gemv_mma_with<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    m: usize,
    plan: GemvMmaPlan,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_mma")?;
    const OP: &str = "gguf::gemv_mma";
    let (n, k, row_bytes) = super::ops::sizes(OP, w)?;
    if let Some(detail) = unread(stream, w) {
        return Err(Error::Unsupported { op: OP, detail });
    }
    if ![1, 2].contains(&plan.tiles) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("{plan:?}: a warp takes 1 or 2 tiles of 8 weight rows"),
        });
    }
    if plan.tiles == 2 && one_tile_only::<T>(w.format()) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{plan:?}: a {} weight with {:?} activations takes 1 tile a warp (GemvMmaPlan::for_weight gives the plan that exists)",
                w.format(),
                T::TYPE
            ),
        });
    }
    super::ops::check_batch(OP, w, x.len(), y.len(), m)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let nt = plan.tiles as u32;
    let cfg = LaunchConfig::linear(n.div_ceil(8 * nt), GEMV_MMA_THREADS);
    gemv_mma_kernel::gguf_gemv_mma::<T>(
        stream,
        cfg,
        w.format().code(),
        nt,
        w.words(),
        &x.view_as::<u32>()?,
        y,
        m as u32,
        n,
        k,
        row_bytes,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::GemvMmaPlan;

    #[test]
    fn plans_take_two_tiles_where_every_sm_still_gets_a_block() {
        let tiles = |rows, sms| GemvMmaPlan::for_rows(rows, sms).tiles;
        assert_eq!(tiles(28672, 132), 2);
        assert_eq!(tiles(4096, 132), 2);
        assert_eq!(tiles(2112, 132), 2);
        assert_eq!(tiles(2000, 132), 1);
        assert_eq!(tiles(5, 2), 1);
    }
}
