//! The public GEMM entry points: check every buffer against the shape, select the kernel,
//! launch.

use super::element::GemmElement;
use super::epilogue::{Epilogue, FLAG_PLAIN_PAIRS, FLAG_VEC_A, FLAG_VEC_B};
use super::layout::{extent, GemmShape, Layout};
use super::select::{select, Math};
use super::wgmma_tma::{MN_BOX, TMA_BK, TMA_TILE_M, TMA_TILE_N};
use crate::Error;
use kernel_runtime::{Buffer, KernelArg, Stream, TensorMap, TensorSwizzle, TensorTiling};

/// `C = act(alpha·op(A)·op(B) + beta·C + bias) + residual` for every batch of `shape`.
///
/// `A`, `B` (and the epilogue's bias and residual) are stored as `T`; `C` as `O` (`T` or
/// f32). f32 inputs use the fp32 SIMT kernel or, with [`Math::Tf32`], TF32 tensor cores;
/// bf16/f16 inputs use tensor cores (sm_80+). A buffer too small for the shape, a leading
/// dimension below its row width or an unsupported type combination is an error before
/// anything runs.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // [1 2; 3 4] · [5 6; 7 8]ᵀ, then + bias [1, -1]
/// let a = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
/// let b = Buffer::from_host(&stream, &[5.0f32, 6.0, 7.0, 8.0])?;
/// let bias = Buffer::from_host(&stream, &[1.0f32, -1.0])?;
/// let mut c = Buffer::<f32>::zeros(&stream, 4)?;
/// let shape = GemmShape::new(Layout::Nt, 2, 2, 2);
/// gemm(&stream, &shape, &a, &b, &mut c, &Epilogue::default().with_bias(&bias), Math::Fp32)?;
/// assert_eq!(c.to_host(&stream)?, vec![18.0, 22.0, 40.0, 52.0]);
/// # Ok(()) }
/// ```
pub fn gemm<T: GemmElement, O: GemmElement>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    math: Math,
) -> Result<(), Error> {
    const OP: &str = "gemm";
    shape.check(OP, a.len(), b.len(), c.len())?;
    if let Some(bias) = epilogue.bias {
        at_least(OP, "bias", bias.len(), shape.n, "n, one per output column")?;
    }
    if let Some(res) = epilogue.residual {
        let need = extent(shape.m, shape.n, shape.ldc, shape.batch, shape.stride_c);
        at_least(OP, "residual", res.len(), need, "C's shape, ldc and stride")?;
    }
    let plan = select(T::DTYPE, O::DTYPE, math, shape, stream.device().target())?;
    if shape.is_empty() {
        return Ok(());
    }
    let v = plan.vector_elems;
    let (_, a_cols) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (_, b_cols) = shape.layout.b_rows_cols(shape.n, shape.k);
    let mut flags = epilogue.flags();
    if vector_ok(a_cols, shape.lda, shape.stride_a, shape.batch, v) {
        flags |= FLAG_VEC_A;
    }
    if vector_ok(b_cols, shape.ldb, shape.stride_b, shape.batch, v) {
        flags |= FLAG_VEC_B;
    }
    if epilogue.is_plain() && vector_ok(shape.n, shape.ldc, shape.stride_c, shape.batch, 2) {
        flags |= FLAG_PLAIN_PAIRS;
    }
    let maps = if plan.tensor_maps {
        Some(tensor_maps(shape, a, b)?)
    } else {
        None
    };
    let u = |x: usize| KernelArg::from(x as u32);
    let mut args = vec![
        KernelArg::from(a),
        KernelArg::from(b),
        KernelArg::from(&mut *c),
        KernelArg::from(epilogue.bias.unwrap_or(a)),
        KernelArg::from(epilogue.residual.unwrap_or(a)),
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.lda),
        u(shape.ldb),
        u(shape.ldc),
        u(shape.stride_a),
        u(shape.stride_b),
        u(shape.stride_c),
        KernelArg::from(epilogue.alpha),
        KernelArg::from(epilogue.beta),
        KernelArg::from(flags),
    ];
    if let Some((map_a, map_b)) = &maps {
        args.push(KernelArg::from(map_a));
        args.push(KernelArg::from(map_b));
    }
    let mut config = plan.config;
    if plan.tensor_maps {
        // Persistent: one CTA per SM at most (the tile loop covers the rest), spread over
        // the batches.
        let sms = stream.device().props().sm_count.max(1);
        let per_batch = sms.div_ceil(config.grid[2]).max(1);
        config.grid[0] = config.grid[0].min(per_batch);
    }
    stream.launch(plan.kernel.artifacts(), config, &args)?;
    Ok(())
}

/// `C = A·B` for row-major `A` (`m × k`), `B` (`k × n`) and `C` (`m × n`), with the default
/// math for `T` (fp32 SIMT for f32, tensor cores for 16-bit types).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let a = Buffer::from_host(&stream, &[1.0f32, 2.0])?; // 1 × 2
/// let b = Buffer::from_host(&stream, &[3.0f32, 4.0])?; // 2 × 1
/// let mut c = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::gemm::matmul(&stream, &a, &b, &mut c, 1, 1, 2)?;
/// assert_eq!(c.to_host(&stream)?, vec![11.0]);
/// # Ok(()) }
/// ```
pub fn matmul<T: GemmElement>(
    stream: &Stream,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    let shape = GemmShape::new(Layout::Nn, m, n, k);
    gemm(stream, &shape, a, b, c, &Epilogue::default(), Math::Fp32)
}

/// The tensor maps the TMA kernel reads A and B through: k-contiguous operands in boxes of
/// the whole tile × one k-slab, the others in 64-wide blocks, all 128-byte swizzled, one
/// matrix per batch index.
fn tensor_maps<T: GemmElement>(
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
) -> Result<(TensorMap, TensorMap), Error> {
    let (a_rows, a_cols) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (b_rows, b_cols) = shape.layout.b_rows_cols(shape.n, shape.k);
    let map = |buf: &Buffer<T>, rows, cols, ld, stride, k_major, tile| {
        let (box_rows, box_cols) = if k_major {
            (tile, TMA_BK)
        } else {
            (TMA_BK, MN_BOX)
        };
        let batch_stride = if shape.batch <= 1 { rows * ld } else { stride };
        let tiling = TensorTiling::matrix(
            rows as u64,
            cols as u64,
            ld as u64,
            box_rows,
            box_cols,
            TensorSwizzle::B128,
        )
        .batched(shape.batch.max(1) as u64, batch_stride as u64);
        TensorMap::tiled(buf.view(), &tiling)
    };
    let layout = shape.layout;
    let map_a = map(
        a,
        a_rows,
        a_cols,
        shape.lda,
        shape.stride_a,
        layout.a_k_contiguous(),
        TMA_TILE_M,
    )?;
    let map_b = map(
        b,
        b_rows,
        b_cols,
        shape.ldb,
        shape.stride_b,
        layout.b_k_contiguous(),
        TMA_TILE_N,
    )?;
    Ok((map_a, map_b))
}

/// Runs of `v` elements along stored rows are wholly inside or outside every matrix, and
/// start 16-byte aligned (buffers themselves are allocation-aligned).
fn vector_ok(cols: usize, ld: usize, stride: usize, batch: usize, v: usize) -> bool {
    cols.is_multiple_of(v) && ld.is_multiple_of(v) && (batch <= 1 || stride.is_multiple_of(v))
}

fn at_least(
    op: &'static str,
    buffer: &'static str,
    actual: usize,
    need: usize,
    why: &str,
) -> Result<(), Error> {
    if actual >= need {
        Ok(())
    } else {
        Err(Error::Length {
            op,
            buffer,
            expected: need,
            actual,
            why: format!("at least: {why}"),
        })
    }
}
