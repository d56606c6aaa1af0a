//! The emulator's tensor map: what `cp.async.bulk.tensor` needs to know about a tensor in
//! global memory and the box it copies.
//!
//! A real `CUtensorMap` is 128 opaque bytes whose layout belongs to the driver, so the emulator
//! defines its own 128-byte encoding: the runtime builds a [`TensorMap`] when the device is the
//! emulator and passes [`TensorMap::encode`]'s bytes where a kernel expects the map (a
//! `.param .align 64 .b8 tmap[128]` parameter, or 128 bytes of global memory).
//!
//! Encoding (little-endian): bytes 0..4 the magic `PXTM`, 4..6 the version, 6 the swizzle
//! code, 7 zero, 8..12 `elem_bytes`, 12..16 `rank`, 16..24 `address`, 24..64 `dims`,
//! 64..104 `strides`, 104..124 `boxes`, 124..128 an FNV-1a checksum of bytes 0..124, so that
//! bytes that are not a map (a real `CUtensorMap`, zeros, a stale buffer) are recognised.

/// How a copy permutes the 16-byte chunks of each 128-byte line of shared memory, matching the
/// swizzled layouts `wgmma` descriptors read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorSwizzle {
    None,
    B32,
    B64,
    B128,
}

impl TensorSwizzle {
    /// The span in bytes one swizzled row may occupy (0 without a swizzle).
    ///
    /// ```
    /// assert_eq!(ptx_emulator::TensorSwizzle::B64.span(), 64);
    /// ```
    pub fn span(self) -> u32 {
        match self {
            TensorSwizzle::None => 0,
            TensorSwizzle::B32 => 32,
            TensorSwizzle::B64 => 64,
            TensorSwizzle::B128 => 128,
        }
    }

    /// The shared address byte `address` of the unswizzled box lands at: address bits 7 and up
    /// XORed into the 16-byte chunk index (bits 4..6), as the hardware and `wgmma` apply it to
    /// the absolute shared address.
    ///
    /// ```
    /// use ptx_emulator::TensorSwizzle;
    /// assert_eq!(TensorSwizzle::B128.apply(0x180), 0x1b0);
    /// assert_eq!(TensorSwizzle::None.apply(0x180), 0x180);
    /// ```
    pub fn apply(self, address: u64) -> u64 {
        let mask = match self {
            TensorSwizzle::None => return address,
            TensorSwizzle::B32 => 1,
            TensorSwizzle::B64 => 3,
            TensorSwizzle::B128 => 7,
        };
        address ^ (((address >> 7) & mask) << 4)
    }

    fn code(self) -> u8 {
        match self {
            TensorSwizzle::None => 0,
            TensorSwizzle::B32 => 1,
            TensorSwizzle::B64 => 2,
            TensorSwizzle::B128 => 3,
        }
    }

    fn from_code(code: u8) -> Option<TensorSwizzle> {
        Some(match code {
            0 => TensorSwizzle::None,
            1 => TensorSwizzle::B32,
            2 => TensorSwizzle::B64,
            3 => TensorSwizzle::B128,
            _ => return None,
        })
    }
}

/// A tiled tensor in global memory and the box one `cp.async.bulk.tensor` copies out of it.
/// Dimension 0 is the innermost (contiguous) one; entries past `rank` are unused and must be 1
/// in `dims` and `boxes`.
///
/// ```
/// use ptx_emulator::{TensorMap, TensorSwizzle};
/// // A 100x70 f32 matrix with rows 512 bytes apart, copied in 32x8 boxes.
/// let map = TensorMap {
///     elem_bytes: 4,
///     rank: 2,
///     address: 0x1000,
///     dims: [70, 100, 1, 1, 1],
///     strides: [4, 512, 0, 0, 0],
///     boxes: [32, 8, 1, 1, 1],
///     swizzle: TensorSwizzle::B128,
/// };
/// map.check().unwrap();
/// assert_eq!(TensorMap::decode(&map.encode()), Ok(map));
/// assert_eq!(map.box_bytes(), 32 * 8 * 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// Bytes per element: 1, 2, 4 or 8.
    pub elem_bytes: u32,
    /// Number of dimensions, 1..=5.
    pub rank: u32,
    /// Global address of element (0, .., 0); 16-byte aligned.
    pub address: u64,
    /// Extent of each dimension in elements, innermost first.
    pub dims: [u64; 5],
    /// Byte stride of each dimension: `strides[0]` is `elem_bytes`, the others multiples of 16.
    pub strides: [u64; 5],
    /// Box extent per dimension, 1..=256; `boxes[0] * elem_bytes` a multiple of 16.
    pub boxes: [u32; 5],
    /// With a swizzle, `boxes[0] * elem_bytes` is at most the swizzle span.
    pub swizzle: TensorSwizzle,
}

/// Marks the 128 bytes as an emulator tensor map.
const MAGIC: [u8; 4] = *b"PXTM";
/// Bumped whenever the layout of the encoding changes.
const VERSION: u16 = 1;
const MAX_RANK: u32 = 5;
const MAX_BOX: u32 = 256;

impl TensorMap {
    /// Bytes one copy moves: the whole box, elements outside the tensor included.
    pub fn box_bytes(&self) -> u64 {
        let rank = self.rank.clamp(1, MAX_RANK) as usize;
        self.boxes[..rank]
            .iter()
            .fold(self.elem_bytes as u64, |n, &b| n * b as u64)
    }

    /// Checks every rule of the fields' documentation; the message names the field, what it
    /// must be and what it is.
    ///
    /// ```
    /// use ptx_emulator::{TensorMap, TensorSwizzle};
    /// let map = TensorMap {
    ///     elem_bytes: 2,
    ///     rank: 1,
    ///     address: 0x1000,
    ///     dims: [64, 1, 1, 1, 1],
    ///     strides: [2, 0, 0, 0, 0],
    ///     boxes: [12, 1, 1, 1, 1],
    ///     swizzle: TensorSwizzle::None,
    /// };
    /// let err = map.check().unwrap_err();
    /// assert!(err.contains("boxes[0] * elem_bytes"), "{err}");
    /// ```
    pub fn check(&self) -> Result<(), String> {
        if ![1, 2, 4, 8].contains(&self.elem_bytes) {
            return Err(format!(
                "elem_bytes must be 1, 2, 4 or 8, but is {}",
                self.elem_bytes
            ));
        }
        if !(1..=MAX_RANK).contains(&self.rank) {
            return Err(format!("rank must be 1..={MAX_RANK}, but is {}", self.rank));
        }
        if !self.address.is_multiple_of(16) {
            return Err(format!(
                "address must be 16-byte aligned, but is {:#x}",
                self.address
            ));
        }
        let rank = self.rank as usize;
        for i in 0..MAX_RANK as usize {
            let (dim, boxed) = (self.dims[i], self.boxes[i]);
            if i >= rank {
                if dim != 1 || boxed != 1 {
                    return Err(format!(
                        "dims[{i}] and boxes[{i}] are past rank {rank} and must be 1, but are {dim} and {boxed}"
                    ));
                }
                continue;
            }
            // The hardware counts extents in 32 bits.
            if !(1..=1 << 32).contains(&dim) {
                return Err(format!("dims[{i}] must be 1..=2^32, but is {dim}"));
            }
            if !(1..=MAX_BOX).contains(&boxed) {
                return Err(format!("boxes[{i}] must be 1..={MAX_BOX}, but is {boxed}"));
            }
            let stride = self.strides[i];
            if i == 0 && stride != self.elem_bytes as u64 {
                return Err(format!(
                    "strides[0] must equal elem_bytes ({}), but is {stride}",
                    self.elem_bytes
                ));
            }
            if i > 0 && (stride == 0 || !stride.is_multiple_of(16) || stride >= 1 << 40) {
                return Err(format!(
                    "strides[{i}] must be a non-zero multiple of 16 below 2^40, but is {stride}"
                ));
            }
        }
        let row = self.boxes[0] as u64 * self.elem_bytes as u64;
        if !row.is_multiple_of(16) {
            return Err(format!(
                "boxes[0] * elem_bytes must be a multiple of 16 bytes, but is {} * {} = {row}",
                self.boxes[0], self.elem_bytes
            ));
        }
        let span = self.swizzle.span() as u64;
        if span != 0 && row > span {
            return Err(format!(
                "boxes[0] * elem_bytes must be at most {span} bytes with swizzle {:?}, but is {} * {} = {row}",
                self.swizzle, self.boxes[0], self.elem_bytes
            ));
        }
        Ok(())
    }

    /// The 128 bytes a kernel reads (see the module documentation for the layout). Does not
    /// check the map: a kernel given an invalid one faults, naming the rule it breaks.
    pub fn encode(&self) -> [u8; 128] {
        let mut out = [0u8; 128];
        out[0..4].copy_from_slice(&MAGIC);
        out[4..6].copy_from_slice(&VERSION.to_le_bytes());
        out[6] = self.swizzle.code();
        out[8..12].copy_from_slice(&self.elem_bytes.to_le_bytes());
        out[12..16].copy_from_slice(&self.rank.to_le_bytes());
        out[16..24].copy_from_slice(&self.address.to_le_bytes());
        for i in 0..5 {
            out[24 + 8 * i..32 + 8 * i].copy_from_slice(&self.dims[i].to_le_bytes());
            out[64 + 8 * i..72 + 8 * i].copy_from_slice(&self.strides[i].to_le_bytes());
            out[104 + 4 * i..108 + 4 * i].copy_from_slice(&self.boxes[i].to_le_bytes());
        }
        let sum = checksum(&out[..124]);
        out[124..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads bytes written by [`TensorMap::encode`]; anything else is an error saying what
    /// does not match. The map is not checked (see [`TensorMap::check`]).
    ///
    /// ```
    /// let err = ptx_emulator::TensorMap::decode(&[0; 128]).unwrap_err();
    /// assert!(err.contains("magic"), "{err}");
    /// ```
    pub fn decode(bytes: &[u8; 128]) -> Result<TensorMap, String> {
        if bytes[0..4] != MAGIC {
            return Err(format!(
                "the bytes do not start with the magic `PXTM` of an emulator tensor map (found {:02x?}); \
                 build the map with TensorMap::encode",
                &bytes[0..4]
            ));
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != VERSION {
            return Err(format!(
                "tensor map version {version}, but this emulator reads version {VERSION}"
            ));
        }
        let stored = u32::from_le_bytes(bytes[124..].try_into().expect("4 bytes"));
        let computed = checksum(&bytes[..124]);
        if stored != computed {
            return Err(format!(
                "the checksum is {stored:#010x} but the bytes sum to {computed:#010x}: the map was altered after encoding"
            ));
        }
        let swizzle = TensorSwizzle::from_code(bytes[6])
            .ok_or_else(|| format!("swizzle code {} is not 0..=3", bytes[6]))?;
        if bytes[7] != 0 {
            return Err(format!("reserved byte 7 must be 0, but is {}", bytes[7]));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        Ok(TensorMap {
            elem_bytes: u32_at(8),
            rank: u32_at(12),
            address: u64_at(16),
            dims: std::array::from_fn(|i| u64_at(24 + 8 * i)),
            strides: std::array::from_fn(|i| u64_at(64 + 8 * i)),
            boxes: std::array::from_fn(|i| u32_at(104 + 4 * i)),
            swizzle,
        })
    }
}

/// 32-bit FNV-1a: enough to tell an encoded map from other bytes, not a security measure.
fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests;
