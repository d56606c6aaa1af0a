//! Tensor maps: the description of a strided tensor that the bulk tensor copy
//! (`cp.async.bulk.tensor`, Hopper's TMA) reads in boxes. A map is encoded on the host (by the
//! driver on CUDA, in the emulator's own format on the CPU) and passed to a kernel by value,
//! so a captured graph keeps it with its launch. It holds the buffer it describes alive.

use crate::arg::BufferView;
use crate::buffer::{BufferCore, Storage};
use crate::error::{Error, Result};
use crate::tensor_map_cache;
use kernel_dsl::{ScalarType, TENSOR_MAP_BYTES};
use std::sync::Arc;

/// The most dimensions a tensor map describes.
pub const TENSOR_MAP_MAX_RANK: usize = 5;
/// The most elements a box spans in one dimension.
pub const TENSOR_BOX_MAX: u32 = 256;

/// How a box is laid out in shared memory (the emulator's type, which also computes the
/// permutation): row-major, dimension 0 contiguous, with the 16-byte chunks of each row
/// permuted by XOR with the row index (bits 7 and up of the shared address) for the swizzled
/// modes, the layouts `wgmma` descriptors read without bank conflicts.
pub use ptx_emulator::TensorSwizzle;

/// The tiling of a tensor: extents, strides and box, innermost dimension first.
///
/// `dims[i]` is the extent of dimension `i` in elements; `strides[i]` the distance in elements
/// between consecutive indices of dimension `i + 1` (dimension 0 is contiguous), a multiple of
/// 16 bytes; `boxes[i]` the extent of one copy in dimension `i` (at most 256, and
/// `boxes[0]` a whole number of 16-byte chunks that fits the swizzle span).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorTiling {
    pub dims: Vec<u64>,
    pub strides: Vec<u64>,
    pub boxes: Vec<u32>,
    pub swizzle: TensorSwizzle,
}

impl TensorTiling {
    /// A row-major matrix of `rows × cols` with leading dimension `ld`, copied in boxes of
    /// `box_rows × box_cols`.
    ///
    /// ```
    /// use kernel_runtime::{TensorSwizzle, TensorTiling};
    /// let t = TensorTiling::matrix(100, 64, 72, 128, 64, TensorSwizzle::B128);
    /// assert_eq!((t.dims, t.strides, t.boxes), (vec![64, 100], vec![72], vec![64, 128]));
    /// ```
    pub fn matrix(
        rows: u64,
        cols: u64,
        ld: u64,
        box_rows: u32,
        box_cols: u32,
        swizzle: TensorSwizzle,
    ) -> TensorTiling {
        TensorTiling {
            dims: vec![cols, rows],
            strides: vec![ld],
            boxes: vec![box_cols, box_rows],
            swizzle,
        }
    }

    /// Adds an outer dimension of `count` matrices `stride` elements apart.
    ///
    /// ```
    /// use kernel_runtime::{TensorSwizzle, TensorTiling};
    /// let t = TensorTiling::matrix(8, 8, 8, 8, 8, TensorSwizzle::None).batched(3, 64);
    /// assert_eq!((t.dims, t.strides, t.boxes), (vec![8, 8, 3], vec![8, 64], vec![8, 8, 1]));
    /// ```
    pub fn batched(mut self, count: u64, stride: u64) -> TensorTiling {
        self.dims.push(count);
        self.strides.push(stride);
        self.boxes.push(1);
        self
    }

    /// Bytes one box copy delivers (zero-filled parts included).
    pub fn box_bytes(&self, elem_bytes: u32) -> u32 {
        self.boxes.iter().product::<u32>() * elem_bytes
    }

    /// Every rule the copy engine imposes, checked against a view of `len` elements of
    /// `elem_bytes` bytes at address `addr`.
    fn check(&self, elem_bytes: u64, addr: u64, len: u64) -> Result<()> {
        let rank = self.dims.len();
        if rank == 0 || rank > TENSOR_MAP_MAX_RANK {
            return bad(format!(
                "a tensor map has 1 to {TENSOR_MAP_MAX_RANK} dimensions, not {rank}"
            ));
        }
        if self.strides.len() + 1 != rank || self.boxes.len() != rank {
            return bad(format!(
                "{rank} dimensions need {} strides and {rank} box extents, not {} and {}",
                rank - 1,
                self.strides.len(),
                self.boxes.len()
            ));
        }
        if !addr.is_multiple_of(16) {
            return bad(format!(
                "the tensor must start 16-byte aligned, but its address is {addr:#x}; pass a whole buffer or a view at a 16-byte boundary"
            ));
        }
        for (i, &d) in self.dims.iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return bad(format!(
                    "dimension {i} has extent {d}; it must be 1 to 2^32"
                ));
            }
        }
        for (i, &s) in self.strides.iter().enumerate() {
            let bytes = s * elem_bytes;
            if !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
                return bad(format!(
                    "the stride of dimension {} is {s} elements ({bytes} bytes); it must be a multiple of 16 bytes below 2^40",
                    i + 1
                ));
            }
        }
        for (i, &b) in self.boxes.iter().enumerate() {
            if b == 0 || b > TENSOR_BOX_MAX {
                return bad(format!(
                    "the box extent of dimension {i} is {b}; it must be 1 to {TENSOR_BOX_MAX}"
                ));
            }
        }
        let inner = self.boxes[0] as u64 * elem_bytes;
        if !inner.is_multiple_of(16) {
            return bad(format!(
                "the box's inner extent is {inner} bytes; it must be a multiple of 16"
            ));
        }
        let span = self.swizzle.span() as u64;
        if span != 0 && inner > span {
            return bad(format!(
                "the box's inner extent is {inner} bytes, more than the {span}-byte swizzle span; use a narrower box or a wider swizzle"
            ));
        }
        let last = self.dims[0] * elem_bytes
            + self
                .strides
                .iter()
                .zip(&self.dims[1..])
                .map(|(s, d)| (d - 1) * s * elem_bytes)
                .sum::<u64>();
        let have = len * elem_bytes;
        if last > have {
            return bad(format!(
                "the tensor spans {last} bytes but the buffer holds {have}; check the extents and strides"
            ));
        }
        Ok(())
    }
}

/// An encoded tensor map over a device buffer, passed to a kernel's tensor-map parameter as
/// `KernelArg::from(&map)`.
///
/// ```
/// use kernel_runtime::{Buffer, Device, TensorMap, TensorSwizzle, TensorTiling};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let stream = Device::emulator().stream()?;
/// let a = Buffer::<f32>::zeros(&stream, 64 * 32)?;
/// let tiling = TensorTiling::matrix(64, 32, 32, 16, 32, TensorSwizzle::B128);
/// let map = TensorMap::tiled(a.view(), &tiling)?;
/// assert_eq!(map.box_bytes(), 16 * 32 * 4);
/// // A box wider than the swizzle span is refused before anything is encoded.
/// let wide = TensorTiling::matrix(64, 64, 64, 16, 64, TensorSwizzle::B128);
/// assert!(TensorMap::tiled(a.view(), &wide).is_err());
/// # Ok(()) }
/// ```
pub struct TensorMap {
    bytes: Box<MapBytes>,
    box_bytes: u32,
    elem: ScalarType,
    rank: usize,
    pub(crate) core: Arc<BufferCore>,
}

/// The 128 bytes, aligned as the driver requires of a `CUtensorMap`.
#[repr(C, align(64))]
pub(crate) struct MapBytes(pub [u8; TENSOR_MAP_BYTES as usize]);

impl TensorMap {
    /// Encodes the map of `tiling` over `view` for the view's device. Every rule of the copy
    /// engine (rank, strides, box, swizzle, alignment, the buffer's size) is checked first.
    /// An encoding computed before for the same element type, address and tiling is reused,
    /// so a call repeated on the same buffers costs no driver encoding.
    pub fn tiled(view: BufferView<'_>, tiling: &TensorTiling) -> Result<TensorMap> {
        let elem = view.elem();
        let elem_bytes = elem.bytes() as u64;
        supported(elem)?;
        tiling.check(elem_bytes, view.addr(), view.len() as u64)?;
        let addr = view.addr();
        let on_device = matches!(view.core.storage, Storage::Cuda(_));
        let bytes = tensor_map_cache::encoding(on_device, elem, addr, tiling, || {
            match &view.core.storage {
                Storage::Cuda(_) => crate::cuda::encode_tensor_map(elem, addr, tiling),
                Storage::Emulator(_) => crate::emulator::encode_tensor_map(elem, addr, tiling),
            }
        })?;
        Ok(TensorMap {
            bytes: Box::new(MapBytes(bytes)),
            box_bytes: tiling.box_bytes(elem_bytes as u32),
            elem,
            rank: tiling.dims.len(),
            core: view.core.clone(),
        })
    }

    /// How many encodings the calling thread has computed rather than found remembered (an
    /// encoding is remembered by element type, address and tiling).
    #[doc(hidden)]
    pub fn encodings_computed_on_this_thread() -> u64 {
        tensor_map_cache::computed_on_this_thread()
    }

    /// The element type of the tensor the map describes.
    pub fn elem(&self) -> ScalarType {
        self.elem
    }

    /// How many dimensions the map has (1 to [`TENSOR_MAP_MAX_RANK`]).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// This map, if it describes `elem` values in `rank` dimensions as the `#[kernel]`
    /// parameter `param` of `kernel` declares (`&TensorMap<T, RANK>`); the generated launcher
    /// calls it before launching.
    ///
    /// ```
    /// use kernel_dsl::ScalarType;
    /// use kernel_runtime::{Buffer, Device, TensorMap, TensorSwizzle, TensorTiling};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let stream = Device::emulator().stream()?;
    /// let a = Buffer::<f32>::zeros(&stream, 64 * 32)?;
    /// let map = TensorMap::tiled(a.view(), &TensorTiling::matrix(64, 32, 32, 16, 32, TensorSwizzle::None))?;
    /// assert!(map.expect_param("k", "a", ScalarType::F32, 2).is_ok());
    /// assert!(map.expect_param("k", "a", ScalarType::Bf16, 2).is_err());
    /// assert!(map.expect_param("k", "a", ScalarType::F32, 3).is_err());
    /// # Ok(()) }
    /// ```
    pub fn expect_param(
        &self,
        kernel: &str,
        param: &str,
        elem: ScalarType,
        rank: usize,
    ) -> Result<&TensorMap> {
        if self.elem == elem && self.rank == rank {
            return Ok(self);
        }
        Err(Error::TensorMapParam {
            kernel: kernel.into(),
            param: param.into(),
            want_elem: elem,
            want_rank: rank,
            elem: self.elem,
            rank: self.rank,
        })
    }

    /// Bytes one box copy delivers: what a kernel announces with `mbarrier.arrive.expect_tx`.
    pub fn box_bytes(&self) -> u32 {
        self.box_bytes
    }

    /// The encoded bytes.
    pub(crate) fn bytes(&self) -> &[u8; TENSOR_MAP_BYTES as usize] {
        &self.bytes.0
    }
}

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMap")
            .field("address", &format_args!("{:#x}", self.core.addr))
            .field("box_bytes", &self.box_bytes)
            .finish()
    }
}

/// Element types the copy engine knows.
fn supported(elem: ScalarType) -> Result<()> {
    use ScalarType::*;
    match elem {
        U8 | U16 | U32 | S32 | U64 | S64 | F16 | Bf16 | F32 | F64 => Ok(()),
        other => bad(format!(
            "the copy engine has no `{}` element type; view the buffer as u8, u16, u32, u64, f16, bf16, f32 or f64",
            other.ptx()
        )),
    }
}

fn bad<T>(detail: String) -> Result<T> {
    Err(Error::TensorMap { detail })
}
