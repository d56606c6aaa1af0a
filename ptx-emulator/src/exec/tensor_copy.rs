//! `cp.async.bulk.tensor` in tile mode: copies the box at the given coordinates out of the
//! tensor a [`TensorMap`] describes into shared memory, as the GPU's TMA unit does. Elements
//! outside the tensor (negative coordinates included) read as zero; the box lands row-major
//! (dimension 0 contiguous) with each 16-byte chunk moved by the map's swizzle, applied to the
//! absolute shared address exactly as `wgmma` descriptors read it. The copy completes when
//! issued, so the caller completes the whole box's bytes on the mbarrier at once.

use super::context::{effective, Ctx};
use super::thread::FaultKind;
use crate::error::Access;
use crate::program::{MapSource, Space, TensorCopy};
use crate::TensorMap;

/// The shared destination's alignment the PTX ISA requires. (A 128-byte swizzle lines its
/// pattern up with 1024-byte blocks, so kernels align such tiles to 1024 bytes on hardware;
/// the emulator swizzles absolute addresses and so accepts any 128-byte-aligned tile.)
const DST_ALIGN: u64 = 128;
/// A tensor map in memory must be aligned like a `CUtensorMap`.
const MAP_ALIGN: u64 = 64;
/// Swizzles permute 16-byte chunks, and every box row is a whole number of them.
pub(crate) const CHUNK: usize = 16;
/// The bytes of a tensor map.
const MAP_BYTES: usize = 128;

/// Performs `copy` for thread `t` into the shared memory `base` selects (0: this CTA's, else a
/// cluster rank's, as `mapa` forms it); returns the bytes the mbarrier is to see completed.
pub(crate) fn tensor_copy(
    ctx: &mut Ctx<'_>,
    regs: &[u64],
    t: usize,
    copy: &TensorCopy,
    base: u64,
) -> Result<u64, FaultKind> {
    let (map, coords) = map_and_box(ctx, regs, t, &copy.map, &copy.coords)?;
    let rank = map.rank as usize;
    let dst = effective(regs, &copy.dst) & super::context::CLUSTER_OFFSET;
    check_tile(dst, "destination")?;
    let eb = map.elem_bytes as u64;
    let row_bytes = map.boxes[0] as u64 * eb;
    let rows: u64 = map.boxes[1..rank].iter().map(|&b| b as u64).product();
    let mut row = vec![0u8; row_bytes as usize];
    for r in 0..rows {
        row.fill(0);
        if let Some(offset) = row_offset(&map, &coords, r) {
            // Dimension 0 is contiguous: the part of the row inside the tensor is one read.
            let lo = coords[0].max(0);
            let hi = (coords[0] + map.boxes[0] as i64).min(map.dims[0] as i64);
            if lo < hi {
                let src = map.address + offset + lo as u64 * eb;
                let n = (hi - lo) as u64 * eb;
                let bytes = ctx.bytes(Space::Global, src, n as u32, t, Access::Load)?;
                let at = ((lo - coords[0]) as u64 * eb) as usize;
                row[at..at + n as usize].copy_from_slice(bytes);
            }
        }
        let line = dst + r * row_bytes;
        for (k, chunk) in row.chunks_exact(CHUNK).enumerate() {
            let to = map.swizzle.apply(line + (k * CHUNK) as u64);
            ctx.write(Space::Shared, to | base, chunk, t)?;
        }
    }
    Ok(map.box_bytes())
}

/// The tensor map `source` names, checked against the instruction's rank (one coordinate a
/// dimension), and the box's signed coordinates.
pub(crate) fn map_and_box(
    ctx: &mut Ctx<'_>,
    regs: &[u64],
    t: usize,
    source: &MapSource,
    coords: &[crate::program::Slot],
) -> Result<(TensorMap, Vec<i64>), FaultKind> {
    let map = load_map(ctx, regs, t, source)?;
    if map.rank as usize != coords.len() {
        return Err(FaultKind::TensorCopy(format!(
            "the instruction is `.{}d`, but the tensor map has rank {}",
            coords.len(),
            map.rank
        )));
    }
    let coords = coords
        .iter()
        .map(|&s| regs[s as usize] as u32 as i32 as i64)
        .collect();
    Ok((map, coords))
}

/// A tile in shared memory (the `what` of a tensor copy) starts on the boundary the PTX ISA
/// requires.
pub(crate) fn check_tile(addr: u64, what: &str) -> Result<(), FaultKind> {
    if addr.is_multiple_of(DST_ALIGN) {
        return Ok(());
    }
    Err(FaultKind::TensorCopy(format!(
        "the shared {what} {addr:#x} is not {DST_ALIGN}-byte aligned (hardware also wants \
         1024-byte alignment with a 128-byte swizzle, so the pattern lines up)"
    )))
}

/// Byte offset in the tensor of box row `r` (dimensions 1 and up), or `None` when the row
/// lies outside the tensor and is all zeros.
pub(crate) fn row_offset(map: &TensorMap, coords: &[i64], r: u64) -> Option<u64> {
    let rank = map.rank as usize;
    let mut rest = r;
    let mut offset = 0u64;
    let dims = coords[1..rank]
        .iter()
        .zip(&map.boxes[1..rank])
        .zip(map.dims[1..rank].iter().zip(&map.strides[1..rank]));
    for ((&c, &extent), (&dim, &stride)) in dims {
        let x = c + (rest % extent as u64) as i64;
        rest /= extent as u64;
        if x < 0 || x as u64 >= dim {
            return None;
        }
        offset += x as u64 * stride;
    }
    Some(offset)
}

/// Reads, decodes and checks the tensor map; a fault names where it came from.
fn load_map(
    ctx: &mut Ctx<'_>,
    regs: &[u64],
    t: usize,
    source: &MapSource,
) -> Result<TensorMap, FaultKind> {
    let mut bytes = [0u8; MAP_BYTES];
    let what = match source {
        MapSource::Param { name, offset } => {
            let start = *offset as usize;
            bytes.copy_from_slice(&ctx.params[start..start + MAP_BYTES]);
            format!("the tensor map in kernel parameter `{name}`")
        }
        MapSource::Address(slot) => {
            let addr = regs[*slot as usize];
            if !addr.is_multiple_of(MAP_ALIGN) {
                return Err(FaultKind::TensorCopy(format!(
                    "the tensor map address {addr:#x} is not {MAP_ALIGN}-byte aligned"
                )));
            }
            for (i, part) in bytes.chunks_exact_mut(CHUNK).enumerate() {
                let at = addr + (i * CHUNK) as u64;
                let chunk = ctx.read(Space::Generic, at, CHUNK as u32, t, Access::Load)?;
                part.copy_from_slice(&chunk[..CHUNK]);
            }
            format!("the tensor map at address {addr:#x}")
        }
    };
    let map = TensorMap::decode(&bytes)
        .map_err(|e| FaultKind::TensorCopy(format!("{what} is not a tensor map: {e}")))?;
    map.check()
        .map_err(|e| FaultKind::TensorCopy(format!("{what} is invalid: {e}")))?;
    Ok(map)
}
