//! `cp.async.bulk.tensor` from shared to global memory in tile mode: the inverse of the tile
//! load. The box is read from shared memory row-major through the map's swizzle, and only the
//! elements inside the tensor are written; those past its edges are dropped, as the TMA unit
//! drops them. The store completes when issued.

use super::context::{effective, Ctx};
use super::tensor_copy::{check_tile, map_and_box, row_offset, CHUNK};
use super::thread::FaultKind;
use crate::error::Access;
use crate::program::{Space, TensorStore};

/// Performs `store` for thread `t`.
pub(crate) fn tensor_store(
    ctx: &mut Ctx<'_>,
    regs: &[u64],
    t: usize,
    store: &TensorStore,
) -> Result<(), FaultKind> {
    let (map, coords) = map_and_box(ctx, regs, t, &store.map, &store.coords)?;
    let rank = map.rank as usize;
    let src = effective(regs, &store.src) & 0xffff_ffff;
    check_tile(src, "source")?;
    let eb = map.elem_bytes as u64;
    let row_bytes = map.boxes[0] as u64 * eb;
    let rows: u64 = map.boxes[1..rank].iter().map(|&b| b as u64).product();
    let mut row = vec![0u8; row_bytes as usize];
    for r in 0..rows {
        let line = src + r * row_bytes;
        for (k, chunk) in row.chunks_exact_mut(CHUNK).enumerate() {
            let from = map.swizzle.apply(line + (k * CHUNK) as u64);
            let bytes = ctx.read(Space::Shared, from, CHUNK as u32, t, Access::Load)?;
            chunk.copy_from_slice(&bytes[..CHUNK]);
        }
        let Some(offset) = row_offset(&map, &coords, r) else {
            continue;
        };
        let lo = coords[0].max(0);
        let hi = (coords[0] + map.boxes[0] as i64).min(map.dims[0] as i64);
        if lo < hi {
            let to = map.address + offset + lo as u64 * eb;
            let at = ((lo - coords[0]) as u64 * eb) as usize;
            let n = ((hi - lo) as u64 * eb) as usize;
            // Dimension 0 is contiguous: the part of the row inside the tensor is one write.
            ctx.bytes(Space::Global, to, n as u32, t, Access::Store)?
                .copy_from_slice(&row[at..at + n]);
        }
    }
    Ok(())
}
