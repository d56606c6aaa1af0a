//! Tensor maps in the emulator's own encoding (the driver's format is opaque).

use crate::error::{Error, Result};
use crate::tensor_map::TensorTiling;
use kernel_dsl::{ScalarType, TENSOR_MAP_BYTES};
use ptx_emulator::TensorMap as EmuMap;

/// The emulator's encoding of `tiling` over the tensor at emulator address `addr` (an element
/// type the copy engine knows, checked by the caller).
pub(crate) fn encode_tensor_map(
    elem: ScalarType,
    addr: u64,
    tiling: &TensorTiling,
) -> Result<[u8; TENSOR_MAP_BYTES as usize]> {
    let elem_bytes = elem.bytes();
    let rank = tiling.dims.len();
    let mut map = EmuMap {
        elem_bytes,
        rank: rank as u32,
        address: addr,
        dims: [1; 5],
        strides: [elem_bytes as u64; 5],
        boxes: [1; 5],
        swizzle: tiling.swizzle,
    };
    map.dims[..rank].copy_from_slice(&tiling.dims);
    map.boxes[..rank].copy_from_slice(&tiling.boxes);
    for (i, s) in tiling.strides.iter().enumerate() {
        map.strides[i + 1] = s * elem_bytes as u64;
    }
    map.check().map_err(|detail| Error::TensorMap { detail })?;
    Ok(map.encode())
}
