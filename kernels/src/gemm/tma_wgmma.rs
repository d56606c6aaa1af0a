//! The host op of the `#[kernel]` Hopper GEMM ([`tma_wgmma_kernel`](super::tma_wgmma_kernel)):
//! checks the buffers, encodes the two tensor maps and launches persistent blocks, at most one
//! per SM, over the 128×256 tiles.

use super::layout::GemmShape;
use super::ops::output_store_flags;
use super::tma_wgmma_kernel::{gemm_tma_wgmma, BK, SHARED_BYTES, THREADS, TILE_M, TILE_N};
use super::Layout;
use crate::{check_len, Error, Float};
use kernel_runtime::{Bf16, Buffer, LaunchConfig, Stream, TensorMap, TensorSwizzle, TensorTiling};

const OP: &str = "tma_wgmma_bf16_nt";

/// `c = a · bᵀ` for bf16 `a` (`m × k`) and `b` (`n × k`), both row-major, into f32 `c`
/// (`m × n`), on the tensor cores of an sm_90a device (or the emulator for sm_90a). `k` must be
/// a multiple of 8, so that each row starts 16-byte aligned as the copy engine needs.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let (m, n, k) = (3, 5, 8);
/// let a = Buffer::from_host(&stream, &vec![Bf16::from_f32(1.0); m * k])?;
/// let b = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); n * k])?;
/// let mut c = Buffer::<f32>::zeros(&stream, m * n)?;
/// kernels::gemm::tma_wgmma_bf16_nt(&stream, &a, &b, &mut c, m as u32, n as u32, k as u32)?;
/// assert_eq!(c.to_host(&stream)?, vec![4.0; m * n]);
/// // A k that leaves rows unaligned is refused before anything launches.
/// assert!(kernels::gemm::tma_wgmma_bf16_nt(&stream, &a, &b, &mut c, m as u32, n as u32, 7).is_err());
/// # Ok(()) }
/// ```
pub fn tma_wgmma_bf16_nt(
    stream: &Stream,
    a: &Buffer<Bf16>,
    b: &Buffer<Bf16>,
    c: &mut Buffer<f32>,
    m: u32,
    n: u32,
    k: u32,
) -> Result<(), Error> {
    if m == 0 || n == 0 || k == 0 || !k.is_multiple_of(8) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("m, n and k must be positive and k a multiple of 8 (16-byte rows for the copy engine), not {m} × {n} × {k}: pad k with zeros"),
        });
    }
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    check_len(OP, "a", a.len(), mu * ku, || format!("m × k = {m} × {k}"))?;
    check_len(OP, "b", b.len(), nu * ku, || format!("n × k = {n} × {k}"))?;
    check_len(OP, "c", c.len(), mu * nu, || format!("m × n = {m} × {n}"))?;
    let (map_a, map_b) = (k_major_map(a, m, k, TILE_M)?, k_major_map(b, n, k, TILE_N)?);
    let cfg = persistent_config(stream, n.div_ceil(TILE_N) * m.div_ceil(TILE_M));
    // A plain product (α = 1, β = 0, no bias, residual or f32 copy; `a` stands in for those
    // unread buffers).
    let flags = output_store_flags(&GemmShape::new(Layout::Nt, mu, nu, ku), true);
    let (half, a_k, b_k, split, glu) = (0, 1, 1, 0, 0);
    let mut no_copy = a.unused_output::<f32>();
    gemm_tma_wgmma::<Bf16, f32>(
        stream,
        cfg,
        half,
        a_k,
        b_k,
        split,
        glu,
        &map_a,
        &map_b,
        &map_b,
        c,
        &mut no_copy,
        &mut a.unused_output::<f32>(),
        &mut a.unused_output::<u32>(),
        a,
        a,
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

/// The launch of the kernel over `tiles` work items of one batch: persistent blocks, at most
/// one per SM, each walking items `grid` apart.
pub(super) fn persistent_config(stream: &Stream, tiles: u32) -> LaunchConfig {
    let sms = stream.device().props().sm_count.max(1);
    LaunchConfig {
        grid: [tiles.min(sms), 1, 1],
        block: [THREADS, 1, 1],
        dynamic_shared_bytes: SHARED_BYTES,
    }
}

/// The tensor map over a row-major `rows × k` operand (k contiguous, one batch), in boxes of
/// `box_rows` rows by one 64-deep slab, 128-byte swizzled, as the kernel's k-contiguous
/// operands land.
pub(super) fn k_major_map<T: Float>(
    buf: &Buffer<T>,
    rows: u32,
    k: u32,
    box_rows: u32,
) -> Result<TensorMap, Error> {
    let (rows, k) = (rows as u64, k as u64);
    let tiling =
        TensorTiling::matrix(rows, k, k, box_rows, BK, TensorSwizzle::B128).batched(1, rows * k);
    Ok(TensorMap::tiled(buf.view(), &tiling)?)
}
