//! The writer: collects metadata and tensors, checks them as the reader would, and lays out a
//! GGUF v3 file (header, metadata, tensor infos, padding, tensors each at an aligned offset).

use super::error::GgufError;
use super::file::{Gguf, DEFAULT_ALIGNMENT, MAX_DIMS, MAX_NAME_BYTES};
use super::read::{MAGIC, MAX_ARRAY_DEPTH, VERSION};
use super::types::TensorType;
use super::value::Value;
use std::path::Path;

/// One tensor waiting to be written.
#[derive(Clone, Debug)]
struct PendingTensor {
    name: String,
    shape: Vec<u64>,
    ty: TensorType,
    data: Vec<u8>,
}

/// Builds a GGUF v3 file. Tensors are laid out in the order added, each at the next multiple
/// of the alignment (`general.alignment` if set, else 32).
///
/// ```
/// use ptxkit::gguf::{Gguf, GgufWriter, TensorType, Value};
/// # fn main() -> Result<(), ptxkit::gguf::GgufError> {
/// let mut w = GgufWriter::new();
/// w.set("general.alignment", Value::U32(64))?;
/// w.add_tensor("a", &[2], TensorType::F32, vec![0; 8])?;
/// w.add_tensor("b", &[2], TensorType::F32, vec![1; 8])?;
/// let bytes = w.to_bytes()?;
/// let file = Gguf::parse(bytes.clone())?;
/// assert_eq!(file.tensor("b")?.offset, 64);
/// // Reading and writing again gives the same bytes.
/// assert_eq!(GgufWriter::from_file(&file)?.to_bytes()?, bytes);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, Value)>,
    tensors: Vec<PendingTensor>,
}

impl GgufWriter {
    /// An empty file.
    pub fn new() -> GgufWriter {
        GgufWriter::default()
    }

    /// A writer holding everything `file` holds, in its order.
    pub fn from_file(file: &Gguf) -> Result<GgufWriter, GgufError> {
        let mut w = GgufWriter::new();
        for (k, v) in file.metadata() {
            w.set(k, v.clone())?;
        }
        for t in file.tensors() {
            w.add_tensor(&t.name, &t.shape, t.ty, file.tensor_data(&t.name)?.to_vec())?;
        }
        Ok(w)
    }

    /// Adds metadata `key` (refused if already set, or if the value is one the reader would
    /// refuse: mixed or too deeply nested arrays, a bad `general.alignment`).
    pub fn set(&mut self, key: &str, value: Value) -> Result<(), GgufError> {
        if self.metadata.iter().any(|(k, _)| k == key) {
            return Err(GgufError::DuplicateKey(key.to_owned()));
        }
        check_value(key, &value, 0)?;
        if key == "general.alignment" {
            let a = value.as_u64().ok_or_else(|| GgufError::WrongValueType {
                key: key.to_owned(),
                expected: "an unsigned integer",
                found: value.value_type().name(),
            })?;
            if !a.is_power_of_two() {
                return Err(GgufError::BadAlignment(a));
            }
        }
        self.metadata.push((key.to_owned(), value));
        Ok(())
    }

    /// Adds a tensor of ggml shape `shape` (fastest dimension first) whose bytes are `data`.
    pub fn add_tensor(
        &mut self,
        name: &str,
        shape: &[u64],
        ty: TensorType,
        data: Vec<u8>,
    ) -> Result<(), GgufError> {
        if name.len() > MAX_NAME_BYTES {
            return Err(GgufError::NameTooLong {
                name: name.to_owned(),
                len: name.len(),
                max: MAX_NAME_BYTES,
            });
        }
        if shape.is_empty() || shape.len() > MAX_DIMS {
            return Err(GgufError::BadDimensionCount {
                name: name.to_owned(),
                dims: shape.len() as u32,
            });
        }
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(GgufError::DuplicateTensor(name.to_owned()));
        }
        let elements = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&n| n > 0 && shape.iter().all(|&d| d > 0));
        let Some(elements) = elements else {
            return Err(GgufError::BadShape {
                name: name.to_owned(),
                shape: shape.to_vec(),
            });
        };
        if !shape[0].is_multiple_of(ty.block_len()) {
            return Err(GgufError::NotWholeBlocks {
                name: name.to_owned(),
                ty: ty.name(),
                ne0: shape[0],
                block: ty.block_len(),
            });
        }
        let expected = ty.bytes_for(elements).unwrap_or(u64::MAX);
        if expected != data.len() as u64 {
            return Err(GgufError::DataSize {
                name: name.to_owned(),
                expected,
                actual: data.len(),
            });
        }
        self.tensors.push(PendingTensor {
            name: name.to_owned(),
            shape: shape.to_vec(),
            ty,
            data,
        });
        Ok(())
    }

    fn alignment(&self) -> u64 {
        self.metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .and_then(|(_, v)| v.as_u64())
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, GgufError> {
        let align = self.alignment() as usize;
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            put_string(&mut out, k);
            out.extend_from_slice(&v.value_type().id().to_le_bytes());
            put_value(&mut out, v);
        }
        let mut offset = 0usize;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            offsets.push(offset);
            offset = (offset + t.data.len()).div_ceil(align) * align;
        }
        for (t, &off) in self.tensors.iter().zip(&offsets) {
            put_string(&mut out, &t.name);
            out.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
            for d in &t.shape {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.ty.id().to_le_bytes());
            out.extend_from_slice(&(off as u64).to_le_bytes());
        }
        out.resize(out.len().div_ceil(align) * align, 0);
        let data_start = out.len();
        for (t, &off) in self.tensors.iter().zip(&offsets) {
            out.resize(data_start + off, 0);
            out.extend_from_slice(&t.data);
        }
        Ok(out)
    }

    /// Writes the file to `path`; nothing is written unless every check passed.
    pub fn write(&self, path: &Path) -> Result<(), GgufError> {
        let bytes = self.to_bytes()?;
        std::fs::write(path, bytes).map_err(|source| GgufError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

fn check_value(key: &str, v: &Value, depth: usize) -> Result<(), GgufError> {
    if let Value::Array(elem, values) = v {
        if depth >= MAX_ARRAY_DEPTH {
            return Err(GgufError::ArrayTooDeep {
                key: key.to_owned(),
                depth: depth + 1,
                max: MAX_ARRAY_DEPTH,
            });
        }
        for x in values {
            if x.value_type() != *elem {
                return Err(GgufError::MixedArray {
                    key: key.to_owned(),
                });
            }
            check_value(key, x, depth + 1)?;
        }
    }
    Ok(())
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_string(out, s),
        Value::Array(elem, values) => {
            out.extend_from_slice(&elem.id().to_le_bytes());
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for x in values {
                put_value(out, x);
            }
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}
