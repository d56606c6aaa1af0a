//! The reader. Every count, length and offset read from the file is checked against the bytes
//! that are left before anything is allocated from it, so a malformed file gets a
//! [`GgufError`] naming what is wrong, never a panic or an allocation sized by the file.
//!
//! Checked: the magic and version 3; that each count (metadata keys, tensors, array elements)
//! could fit in the bytes left at its smallest encoding; string lengths; UTF-8; value type ids;
//! booleans; array nesting depth; duplicate keys and tensor names; `general.alignment` (an
//! integer power of two); per tensor, 1 to 4 dimensions, none zero, an element count and
//! byte size that do not overflow, a known type, `ne[0]` whole blocks, the name length, an
//! aligned offset, an extent inside the data section, and no overlap with another tensor.

use super::error::GgufError;
use super::file::{Gguf, TensorInfo, DEFAULT_ALIGNMENT, MAX_DIMS, MAX_NAME_BYTES};
use super::types::{TensorType, ValueType};
use super::value::Value;

/// `"GGUF"`.
pub(crate) const MAGIC: [u8; 4] = *b"GGUF";
/// The only version read and written.
pub(crate) const VERSION: u32 = 3;
/// Arrays nested deeper than this are refused (bounds the reader's recursion).
pub(crate) const MAX_ARRAY_DEPTH: usize = 4;
/// Bytes of the smallest metadata entry: key length, an empty key, type id, a u8.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;
/// Bytes of the smallest tensor info: name length, dims count, one dim, type id, offset.
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 8 + 4 + 8;

/// A position in the bytes, every read checked against their end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], GgufError> {
        if n > self.left() as u64 {
            return Err(GgufError::Truncated {
                what,
                at: self.at,
                needed: n - self.left() as u64,
                len: self.bytes.len(),
            });
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], GgufError> {
        Ok(self
            .take(N as u64, what)?
            .try_into()
            .expect("take returned N bytes"))
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, GgufError> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, GgufError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &'static str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let at = self.at;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| GgufError::BadUtf8 { what, at })
    }

    /// `count` items of at least `min_bytes` each must fit in what is left.
    fn check_count(&self, what: &'static str, count: u64, min_bytes: u64) -> Result<(), GgufError> {
        let most = self.left() as u64 / min_bytes;
        if count > most {
            return Err(GgufError::CountTooLarge {
                what,
                count,
                left: self.left(),
                most,
            });
        }
        Ok(())
    }

    fn value(&mut self, key: &str, ty: ValueType, depth: usize) -> Result<Value, GgufError> {
        const W: &str = "a metadata value";
        Ok(match ty {
            ValueType::U8 => Value::U8(self.u8(W)?),
            ValueType::I8 => Value::I8(self.u8(W)? as i8),
            ValueType::U16 => Value::U16(self.u16(W)?),
            ValueType::I16 => Value::I16(self.u16(W)? as i16),
            ValueType::U32 => Value::U32(self.u32(W)?),
            ValueType::I32 => Value::I32(self.u32(W)? as i32),
            ValueType::F32 => Value::F32(f32::from_bits(self.u32(W)?)),
            ValueType::U64 => Value::U64(self.u64(W)?),
            ValueType::I64 => Value::I64(self.u64(W)? as i64),
            ValueType::F64 => Value::F64(f64::from_bits(self.u64(W)?)),
            ValueType::Bool => match self.u8(W)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                byte => {
                    return Err(GgufError::BadBool {
                        key: key.to_owned(),
                        byte,
                    })
                }
            },
            ValueType::String => Value::String(self.string("a string value")?),
            ValueType::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::ArrayTooDeep {
                        key: key.to_owned(),
                        depth: depth + 1,
                        max: MAX_ARRAY_DEPTH,
                    });
                }
                let elem = self.value_type(key)?;
                let len = self.u64("an array length")?;
                self.check_count("array elements", len, elem.min_bytes())?;
                let mut values = Vec::with_capacity(len as usize);
                for _ in 0..len {
                    values.push(self.value(key, elem, depth + 1)?);
                }
                Value::Array(elem, values)
            }
        })
    }

    fn value_type(&mut self, key: &str) -> Result<ValueType, GgufError> {
        let id = self.u32("a value type id")?;
        ValueType::from_id(id).ok_or_else(|| GgufError::UnknownValueType {
            key: key.to_owned(),
            id,
        })
    }
}

/// Parses and checks `bytes` (see the module docs for every check).
pub(crate) fn parse(bytes: Vec<u8>) -> Result<Gguf, GgufError> {
    let mut c = Cursor {
        bytes: &bytes,
        at: 0,
    };
    let magic = c.array::<4>("the magic")?;
    if magic != MAGIC {
        return Err(GgufError::BadMagic { found: magic });
    }
    let version = c.u32("the version")?;
    if version != VERSION {
        return Err(GgufError::UnsupportedVersion(version));
    }
    let tensor_count = c.u64("the tensor count")?;
    let kv_count = c.u64("the metadata count")?;
    c.check_count("metadata keys", kv_count, MIN_KV_BYTES)?;
    let mut metadata: Vec<(String, Value)> = Vec::with_capacity(kv_count as usize);
    for _ in 0..kv_count {
        let key = c.string("a metadata key")?;
        let ty = c.value_type(&key)?;
        let value = c.value(&key, ty, 0)?;
        if metadata.iter().any(|(k, _)| *k == key) {
            return Err(GgufError::DuplicateKey(key));
        }
        metadata.push((key, value));
    }
    let alignment = alignment(&metadata)?;
    c.check_count("tensors", tensor_count, MIN_TENSOR_INFO_BYTES)?;
    let mut tensors: Vec<TensorInfo> = Vec::with_capacity(tensor_count as usize);
    for _ in 0..tensor_count {
        let t = tensor_info(&mut c)?;
        if tensors.iter().any(|o| o.name == t.name) {
            return Err(GgufError::DuplicateTensor(t.name));
        }
        tensors.push(t);
    }
    // The data section starts at the next multiple of the alignment (the end of the file if
    // there is no tensor and no padding).
    let data_start = (c.at as u64).div_ceil(alignment) * alignment;
    let data_len = (bytes.len() as u64).saturating_sub(data_start);
    check_extents(&tensors, alignment, data_len)?;
    Ok(Gguf {
        version,
        metadata,
        tensors,
        alignment,
        data_start: data_start.min(bytes.len() as u64) as usize,
        bytes,
    })
}

fn alignment(metadata: &[(String, Value)]) -> Result<u64, GgufError> {
    let Some((_, v)) = metadata.iter().find(|(k, _)| k == "general.alignment") else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    let a = v.as_u64().ok_or_else(|| GgufError::WrongValueType {
        key: "general.alignment".into(),
        expected: "an unsigned integer",
        found: v.value_type().name(),
    })?;
    if !a.is_power_of_two() {
        return Err(GgufError::BadAlignment(a));
    }
    Ok(a)
}

fn tensor_info(c: &mut Cursor) -> Result<TensorInfo, GgufError> {
    let name = c.string("a tensor name")?;
    if name.len() > MAX_NAME_BYTES {
        return Err(GgufError::NameTooLong {
            len: name.len(),
            name,
            max: MAX_NAME_BYTES,
        });
    }
    let dims = c.u32("a tensor's dimension count")?;
    if dims == 0 || dims as usize > MAX_DIMS {
        return Err(GgufError::BadDimensionCount { name, dims });
    }
    let mut shape = Vec::with_capacity(dims as usize);
    for _ in 0..dims {
        shape.push(c.u64("a tensor dimension")?);
    }
    let id = c.u32("a tensor type id")?;
    let offset = c.u64("a tensor offset")?;
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n > 0 && shape.iter().all(|&d| d > 0));
    let Some(elements) = elements else {
        return Err(GgufError::BadShape { name, shape });
    };
    let ty = TensorType::from_id(id).ok_or_else(|| GgufError::UnknownTensorType {
        name: name.clone(),
        id,
    })?;
    if !shape[0].is_multiple_of(ty.block_len()) {
        return Err(GgufError::NotWholeBlocks {
            name,
            ty: ty.name(),
            ne0: shape[0],
            block: ty.block_len(),
        });
    }
    if ty.bytes_for(elements).is_none() {
        return Err(GgufError::BadShape { name, shape });
    }
    Ok(TensorInfo {
        name,
        shape,
        ty,
        offset,
    })
}

/// Every tensor aligned, inside the data section, and apart from every other.
fn check_extents(tensors: &[TensorInfo], alignment: u64, data_len: u64) -> Result<(), GgufError> {
    let mut spans: Vec<(u64, u64, usize)> = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if !t.offset.is_multiple_of(alignment) {
            return Err(GgufError::Misaligned {
                name: t.name.clone(),
                offset: t.offset,
                alignment,
            });
        }
        let end = t.offset.checked_add(t.bytes()).filter(|&e| e <= data_len);
        let Some(end) = end else {
            return Err(GgufError::TensorOutOfFile {
                name: t.name.clone(),
                start: t.offset,
                end: t.offset.saturating_add(t.bytes()),
                len: data_len,
            });
        };
        spans.push((t.offset, end, i));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let ((_, end, a), (start, _, b)) = (pair[0], pair[1]);
        if start < end {
            return Err(GgufError::Overlap {
                first: tensors[a].name.clone(),
                second: tensors[b].name.clone(),
            });
        }
    }
    Ok(())
}
