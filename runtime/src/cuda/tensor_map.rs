//! Tensor maps encoded by the driver (`cuTensorMapEncodeTiled`).

use crate::error::{Error, Result};
use crate::tensor_map::{TensorSwizzle, TensorTiling};
use cudarc::driver::sys;
use kernel_dsl::{ScalarType, TENSOR_MAP_BYTES};

/// The driver's encoding of `tiling` over the tensor at device address `addr` (an element type
/// the copy engine knows, checked by the caller). Out-of-bounds elements of a box read as
/// zero.
pub(crate) fn encode_tensor_map(
    elem: ScalarType,
    addr: u64,
    tiling: &TensorTiling,
) -> Result<[u8; TENSOR_MAP_BYTES as usize]> {
    use sys::CUtensorMapDataType as D;
    let data_type = match elem {
        ScalarType::U8 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        ScalarType::U16 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        ScalarType::U32 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        ScalarType::S32 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
        ScalarType::U64 => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        ScalarType::S64 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
        ScalarType::F16 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        ScalarType::Bf16 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ScalarType::F32 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        ScalarType::F64 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        other => unreachable!("TensorMap::tiled admits copy-engine types only, not {other:?}"),
    };
    let swizzle = match tiling.swizzle {
        TensorSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        TensorSwizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        TensorSwizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        TensorSwizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let elem_bytes = elem.bytes() as u64;
    let strides: Vec<u64> = tiling.strides.iter().map(|s| s * elem_bytes).collect();
    let element_strides = vec![1u32; tiling.dims.len()];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: `map` is a writable CUtensorMap; the dimension, stride, box and element-stride
    // arrays each hold `rank` (strides `rank - 1`) entries, as `TensorTiling::check` verified
    // before this call; the driver only reads them and writes `map`.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            tiling.dims.len() as u32,
            addr as *mut std::ffi::c_void,
            tiling.dims.as_ptr(),
            strides.as_ptr(),
            tiling.boxes.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(|e| Error::driver("cuTensorMapEncodeTiled", e))?;
    // SAFETY: the map started zeroed and the driver initialised it; it is plain data.
    let map = unsafe { map.assume_init() };
    let mut bytes = [0u8; TENSOR_MAP_BYTES as usize];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Ok(bytes)
}

const _: () = assert!(std::mem::size_of::<sys::CUtensorMap>() == TENSOR_MAP_BYTES as usize);
