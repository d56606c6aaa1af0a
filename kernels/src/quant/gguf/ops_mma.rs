//! The host entry point of the tensor-core GEMV: shapes checked before launch, the
//! activations passed as words.

use super::gemv_mma_kernel::{self, GEMV_MMA_THREADS};
use super::{GgufFormat, GgufShape, GgufWeights};
use crate::check_len;
use crate::Error;
use crate::{Float, FloatType};
use kernel_runtime::{Buffer, BufferViewMut, LaunchConfig, Stream};

/// `y = x·Wᵀ` for the `m` rows of `x` (`m × cols`), `W` the `rows × cols` Q8_0, Q4_K or
/// Q6_K weights of `w` (for Q8_0, `cols` a multiple of 256), `y` `m × rows`, on the tensor
/// cores (`mma.sync`, sm_80+): the decode product of a batch of sequences. Each weight is
/// decoded in registers to bf16 with one rounding from bf16 scales
/// ([`GgufMatrix::bf16_operand`](super::GgufMatrix::bf16_operand) gives the same values):
/// Q8_0's `q·d` with `d` rounded to bf16; Q4_K's `u·a − b`, with the sub-block scale
/// `a = scale·d` and offset `b = min·dmin` each rounded to bf16 from `d` and `dmin` rounded
/// to bf16; Q6_K's `a·(q − 32)` with `a = d·scale` rounded to bf16 from `d` rounded to
/// bf16. `x` is taken as bf16 (f32 rows rounded to nearest even), products
/// are summed in f32 and `y` rounded to `T` once. `x` and `y` are both f32 or both bf16, or
/// `x` bf16 and `y` f32 (a bf16 input, such as attention's output, needs no cast to feed an
/// f32 stream: the product reads the same bf16 values). `m` is 1 to
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
pub fn gemv_mma<X: Float, T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<X>,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    let sms = stream.device().props().sm_count as usize;
    let plan = GemvMmaPlan::for_weight::<X>(w.format(), w.rows(), sms);
    gemv_mma_with(stream, w, x, y, m, plan)
}

/// How [`gemv_mma_with`] splits the work: the tiles of 8 weight rows a warp takes, 1 or 2,
/// and the blocks launched at most. Two tiles make the weights the tensor core's 16-row
/// operand, so the activations need no rearranging and rows of `x` past 8 cost a product
/// only when present; one makes twice the blocks (the rows of `x` are then the 16-row
/// operand). A block takes every `grid`-th tile of the weight's rows (a block's tile is 8 or
/// 16 rows), its loads of the next one in flight while it finishes the current one; with
/// `grid` at least the tile count, a block takes one tile. Q6_K with two tiles takes a block
/// a tile whatever `grid` says (a loop over tiles would hold more than its registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemvMmaPlan {
    pub tiles: usize,
    pub grid: usize,
}

impl GemvMmaPlan {
    /// Blocks of the kernel an SM holds at once (its registers are capped for two).
    pub const BLOCKS_PER_SM: usize = 2;

    /// The plan [`gemv_mma`] takes for a weight of `rows` rows on `sms` SMs: two tiles a warp
    /// where that still gives every SM a block, else one; a block a tile of rows unless there
    /// are at least twice as many tiles as the SMs hold blocks, and then as many blocks as
    /// they hold, each walking tiles (with fewer, the blocks that take one tile more than the
    /// others leave SMs idle at the end).
    ///
    /// ```
    /// use kernels::quant::gguf::GemvMmaPlan;
    /// assert_eq!(GemvMmaPlan::for_rows(4096, 132), GemvMmaPlan { tiles: 2, grid: 256 });
    /// assert_eq!(GemvMmaPlan::for_rows(28672, 132), GemvMmaPlan { tiles: 2, grid: 264 });
    /// assert_eq!(GemvMmaPlan::for_rows(1024, 132).tiles, 1);
    /// ```
    pub fn for_rows(rows: usize, sms: usize) -> GemvMmaPlan {
        let tiles = if rows.div_ceil(16) >= sms { 2 } else { 1 };
        GemvMmaPlan {
            tiles,
            grid: Self::grid(rows.div_ceil(8 * tiles), sms),
        }
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
            return GemvMmaPlan {
                tiles: 1,
                grid: Self::grid(rows.div_ceil(8), sms),
            };
        }
        GemvMmaPlan::for_rows(rows, sms)
    }

    /// The blocks for `tiles` tiles of rows on `sms` SMs: as many as the SMs hold where the
    /// tiles are at least twice that, else a block a tile.
    fn grid(tiles: usize, sms: usize) -> usize {
        let held = sms.max(1) * Self::BLOCKS_PER_SM;
        if tiles >= 2 * held {
            held
        } else {
            tiles.max(1)
        }
    }
}

/// Whether a weight of `format` with activations of `T` has only the one-tile kernel: the
/// words of two tiles' next blocks would not fit a thread's registers.
fn one_tile_only<T: Float>(format: GgufFormat) -> bool {
    format == GgufFormat::Q8_0 || (format == GgufFormat::Q6K && T::TYPE == FloatType::F32)
}

/// Whether [`gemv_mma`] reads `w` on the device of `stream` (sm_80 or newer; Q8_0 rows in
/// whole units of 256): callers that pick a GEMV per weight ask this rather than repeat its
/// rules, of the weights on the device or, before they upload them, on the host.
///
/// ```
/// use kernel_runtime::Device;
/// use kernels::quant::gguf::{gemv_mma_reads, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm80).stream()?;
/// let q8 = |cols| GgufMatrix::quantize(GgufFormat::Q8_0, 1, cols, &vec![1.0; cols]);
/// assert!(gemv_mma_reads(&stream, &q8(512)?.to_device(&stream)?));
/// assert!(!gemv_mma_reads(&stream, &q8(288)?));
/// # Ok(()) }
/// ```
pub fn gemv_mma_reads(stream: &Stream, w: &impl GgufShape) -> bool {
    unread(stream, w).is_none()
}

/// Why [`gemv_mma`] cannot read `w` on the device of `stream`, if it cannot.
fn unread(stream: &Stream, w: &impl GgufShape) -> Option<String> {
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
pub fn gemv_mma_with<X: Float, T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<X>,
    y: &mut Buffer<T>,
    m: usize,
    plan: GemvMmaPlan,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<X>("gemv_mma")?;
    crate::float::f32_or_bf16::<T>("gemv_mma")?;
    const OP: &str = "gguf::gemv_mma";
    if X::TYPE != T::TYPE && (X::TYPE, T::TYPE) != (FloatType::Bf16, FloatType::F32) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{:?} x with {:?} y: the GEMV writes the type it reads, or f32 from bf16; cast x first",
                X::TYPE,
                T::TYPE
            ),
        });
    }
    let (n, _, _) = super::ops::sizes(OP, w)?;
    if let Some(detail) = unread(stream, w) {
        return Err(Error::Unsupported { op: OP, detail });
    }
    if ![1, 2].contains(&plan.tiles) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("{plan:?}: a warp takes 1 or 2 tiles of 8 weight rows"),
        });
    }
    if plan.grid == 0 {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("{plan:?}: launch one block at least (GemvMmaPlan::for_weight gives a grid for the device)"),
        });
    }
    if plan.tiles == 2 && one_tile_only::<X>(w.format()) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{plan:?}: a {} weight with {:?} activations takes 1 tile a warp (GemvMmaPlan::for_weight gives the plan that exists)",
                w.format(),
                X::TYPE
            ),
        });
    }
    super::ops::check_batch(OP, w, x.len(), y.len(), m)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (y1, y2) = (x.unused_output::<T>(), x.unused_output::<T>());
    launch::<X, T>(
        stream,
        w,
        x,
        Outputs::Parts([y.view_mut(), y1, y2], [n, 0]),
        m,
        plan,
    )
}

/// Where the tensor-core GEMV's products go.
enum Outputs<'a> {
    /// Columns below `n0` to the first view, below `n0 + n1` to the second, the rest to the
    /// third.
    Parts([BufferViewMut<'a>; 3], [u32; 2]),
    /// `silu(gate)·up` of a stacked gate/up weight, to one view.
    Swiglu(BufferViewMut<'a>),
}

/// Launches the tensor-core GEMV once the caller has checked every shape.
fn launch<X: Float, T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<X>,
    outputs: Outputs<'_>,
    m: usize,
    plan: GemvMmaPlan,
) -> Result<(), Error> {
    let (n, k, row_bytes) = super::ops::sizes("gguf::gemv_mma", w)?;
    let nt = plan.tiles as u32;
    let (glu, [mut y0, mut y1, mut y2], [n0, n1], cols, blocks) = match outputs {
        Outputs::Parts(views, splits) => (0, views, splits, n, n.div_ceil(8 * nt)),
        Outputs::Swiglu(y) => {
            let (y1, y2) = (x.unused_output::<T>(), x.unused_output::<T>());
            (1, [y, y1, y2], [n / 2, 0], n / 2, (n / 2).div_ceil(8))
        }
    };
    // Q6_K with two tiles has no loop over tiles (its registers would spill): a block a tile.
    let blocks_a_tile = nt == 2 && w.format() == GgufFormat::Q6K;
    let grid = if blocks_a_tile {
        blocks
    } else {
        blocks.min(plan.grid as u32)
    };
    let cfg = LaunchConfig::linear(grid, GEMV_MMA_THREADS);
    let view = x.view_as::<u32>()?;
    gemv_mma_kernel::gguf_gemv_mma::<X, T>(
        stream,
        cfg,
        w.format().code(),
        nt,
        glu,
        w.words(),
        &view,
        &mut y0,
        &mut y1,
        &mut y2,
        m as u32,
        cols,
        n0,
        n1,
        k,
        row_bytes,
    )?;
    Ok(())
}

/// [`gemv_mma`] over a weight stacked from up to three (rows of the first, then the
/// second's, then the third's: [`GgufMatrix::stack`](super::GgufMatrix::stack)), each part's
/// products written to its own output in one launch: `parts[i]` rows of `w` go to `ys[i]`
/// (`m × parts[i]`). For the q, k and v projections of a decoder layer, which read the same
/// normalized `x`: one launch instead of three, and a grid that fills more SMs. The values
/// are those [`gemv_mma`] writes for the stacked weight.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_mma_parts, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let ones = |rows| GgufMatrix::quantize(GgufFormat::Q4K, rows, 256, &vec![1.0; rows * 256]);
/// let w = GgufMatrix::stack(&[&ones(2)?, &ones(1)?])?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &vec![0.5f32; 256])?;
/// let (mut a, mut b) = (Buffer::<f32>::zeros(&stream, 2)?, Buffer::<f32>::zeros(&stream, 1)?);
/// gemv_mma_parts(&stream, &w, &[2, 1], &x, &mut [&mut a, &mut b], 1)?;
/// assert_eq!((a.to_host(&stream)?, b.to_host(&stream)?), (vec![128.0; 2], vec![128.0]));
/// # Ok(()) }
/// ```
pub fn gemv_mma_parts<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    parts: &[usize],
    x: &Buffer<T>,
    ys: &mut [&mut Buffer<T>],
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_mma_parts")?;
    const OP: &str = "gguf::gemv_mma_parts";
    if parts.is_empty() || parts.len() > 3 || parts.len() != ys.len() {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{} parts and {} outputs: give one output a part, one to three of them",
                parts.len(),
                ys.len()
            ),
        });
    }
    let total: usize = parts.iter().sum();
    if total != w.rows() {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "the parts {parts:?} cover {total} rows, but the weight has {}",
                w.rows()
            ),
        });
    }
    if let Some(detail) = unread(stream, w) {
        return Err(Error::Unsupported { op: OP, detail });
    }
    super::ops::check_input(OP, w, x.len(), m)?;
    for (i, (y, &rows)) in ys.iter().zip(parts).enumerate() {
        check_len(OP, "ys", y.len(), m * rows, || {
            format!("output {i}: m × parts[{i}] = {m} × {rows}")
        })?;
    }
    if m == 0 || total == 0 {
        return Ok(());
    }
    let sms = stream.device().props().sm_count as usize;
    let plan = GemvMmaPlan::for_weight::<T>(w.format(), w.rows(), sms);
    let splits = [parts[0] as u32, parts.get(1).map_or(0, |&p| p as u32)];
    let mut views = ys.iter_mut().map(|y| y.view_mut());
    let y0 = views.next().expect("one part at least");
    let y1 = views.next().unwrap_or_else(|| x.unused_output::<T>());
    let y2 = views.next().unwrap_or_else(|| x.unused_output::<T>());
    launch::<T, T>(stream, w, x, Outputs::Parts([y0, y1, y2], splits), m, plan)
}

/// `out = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)` for the `m` rows of `x`, from one weight that stacks
/// the gate's `n` rows over the up's `n` ([`GgufMatrix::stack`](super::GgufMatrix::stack));
/// `out` is `m × n`. One launch reads each row of `x` once for both products and writes
/// neither: a warp takes the same 8 rows of each half, so both products of an output are
/// in one lane. The products are [`gemv_mma`]'s, and the SwiGLU's arithmetic is
/// [`crate::elementwise::swiglu`]'s, so the output is bit for bit `swiglu(gate, up)` of
/// [`gemv_mma`]'s f32 products. Takes the two-tile kernel: Q4_K with f32 or bf16 `x`, Q6_K
/// with bf16 `x` ([`gemv_mma_swiglu_reads`] says whether a weight qualifies).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::gguf::{gemv_mma_swiglu, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let fill = |v: f32| GgufMatrix::quantize(GgufFormat::Q4K, 1, 256, &vec![v; 256]);
/// let w = GgufMatrix::stack(&[&fill(0.0)?, &fill(1.0)?])?.to_device(&stream)?;
/// let x = Buffer::from_host(&stream, &vec![1.0f32; 256])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 1)?;
/// gemv_mma_swiglu(&stream, &w, &x, &mut out, 1)?;
/// assert_eq!(out.to_host(&stream)?, vec![0.0]); // silu(0) · 256
/// # Ok(()) }
/// ```
pub fn gemv_mma_swiglu<T: Float>(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<T>,
    out: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("gemv_mma_swiglu")?;
    const OP: &str = "gguf::gemv_mma_swiglu";
    if let Some(detail) = swiglu_unread::<T>(stream, w) {
        return Err(Error::Unsupported { op: OP, detail });
    }
    let n = w.rows() / 2;
    super::ops::check_input(OP, w, x.len(), m)?;
    check_len(OP, "out", out.len(), m * n, || {
        format!("m × rows / 2 = {m} × {n}")
    })?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    launch::<T, T>(
        stream,
        w,
        x,
        Outputs::Swiglu(out.view_mut()),
        m,
        GemvMmaPlan {
            tiles: 2,
            grid: GemvMmaPlan::grid(n.div_ceil(8), stream.device().props().sm_count as usize),
        },
    )
}

/// Whether [`gemv_mma_swiglu`] reads `w` with activations of `T` on the device of
/// `stream`: [`gemv_mma_reads`] holds, the format has the two-tile kernel for `T`, and the
/// rows are an even number (a gate and an up of equal height).
///
/// ```
/// use kernel_runtime::{Bf16, Device};
/// use kernels::quant::gguf::{gemv_mma_swiglu_reads, GgufFormat, GgufMatrix};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w = |f| GgufMatrix::quantize(f, 2, 256, &vec![1.0; 512]);
/// let q6 = w(GgufFormat::Q6K)?.to_device(&stream)?;
/// assert!(gemv_mma_swiglu_reads::<Bf16>(&stream, &q6));
/// assert!(!gemv_mma_swiglu_reads::<f32>(&stream, &q6));
/// # Ok(()) }
/// ```
pub fn gemv_mma_swiglu_reads<T: Float>(stream: &Stream, w: &impl GgufShape) -> bool {
    swiglu_unread::<T>(stream, w).is_none()
}

/// Why [`gemv_mma_swiglu`] cannot read `w` with activations of `T`, if it cannot.
fn swiglu_unread<T: Float>(stream: &Stream, w: &impl GgufShape) -> Option<String> {
    if let Some(detail) = unread(stream, w) {
        return Some(detail);
    }
    if one_tile_only::<T>(w.format()) {
        return Some(format!(
            "a {} weight with {:?} activations has only the one-tile GEMV, and the SwiGLU pair needs two tiles a warp; call gemv_mma on the gate and the up and then elementwise::swiglu",
            w.format(),
            T::TYPE
        ));
    }
    if !w.rows().is_multiple_of(2) {
        return Some(format!(
            "the weight has {} rows, and a stacked gate and up have an even number",
            w.rows()
        ));
    }
    None
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
