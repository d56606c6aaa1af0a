//! A GGUF file read into memory: its metadata, its tensor infos, and the data section they
//! index, every extent checked by [`read`](super::read) before a [`Gguf`] exists.

use super::error::GgufError;
use super::types::TensorType;
use super::value::Value;
use std::path::Path;

/// The alignment of tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The longest tensor name ggml accepts (`GGML_MAX_NAME` less its NUL).
pub const MAX_NAME_BYTES: usize = 63;
/// The most dimensions a ggml tensor has.
pub const MAX_DIMS: usize = 4;

/// One tensor's entry in the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name, as llama.cpp spells it (`blk.0.attn_q.weight`).
    pub name: String,
    /// ggml's `ne`: the fastest-varying dimension first, so a `rows × cols` matrix is
    /// `[cols, rows]`.
    pub shape: Vec<u64>,
    /// How the elements are stored.
    pub ty: TensorType,
    /// Where the bytes start, relative to the data section (a multiple of the alignment).
    pub offset: u64,
}

impl TensorInfo {
    /// Elements in the tensor (checked not to overflow when the file was read).
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Bytes of the tensor's data.
    pub fn bytes(&self) -> u64 {
        self.ty.bytes_for(self.elements()).unwrap_or(u64::MAX)
    }

    /// `(rows, cols)` of a 1- or 2-dimensional tensor: `ne[1]` rows (1 for a vector) of `ne[0]`.
    ///
    /// ```
    /// use ptxkit::gguf::{TensorInfo, TensorType};
    /// let t = TensorInfo { name: "w".into(), shape: vec![256, 3], ty: TensorType::Q4K, offset: 0 };
    /// assert_eq!((t.matrix(), t.bytes()), (Some((3, 256)), 3 * 144));
    /// ```
    pub fn matrix(&self) -> Option<(usize, usize)> {
        let cols = usize::try_from(*self.shape.first()?).ok()?;
        let rows = match self.shape.len() {
            1 => 1,
            2 => usize::try_from(self.shape[1]).ok()?,
            _ => return None,
        };
        Some((rows, cols))
    }
}

/// A whole GGUF file in memory.
///
/// ```
/// use ptxkit::gguf::{Gguf, GgufWriter, TensorType, Value};
/// # fn main() -> Result<(), ptxkit::gguf::GgufError> {
/// let mut w = GgufWriter::new();
/// w.set("general.architecture", Value::from("llama"))?;
/// let ones: Vec<u8> = [1.0f32; 4].iter().flat_map(|x| x.to_le_bytes()).collect();
/// w.add_tensor("output_norm.weight", &[4], TensorType::F32, ones.clone())?;
/// let file = Gguf::parse(w.to_bytes()?)?;
/// assert_eq!(file.string("general.architecture")?, "llama");
/// assert_eq!(file.tensor_data("output_norm.weight")?, &ones[..]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Gguf {
    pub(crate) version: u32,
    pub(crate) metadata: Vec<(String, Value)>,
    pub(crate) tensors: Vec<TensorInfo>,
    pub(crate) alignment: u64,
    pub(crate) data_start: usize,
    pub(crate) bytes: Vec<u8>,
}

impl Gguf {
    /// Reads and checks the file at `path`.
    ///
    /// ```no_run
    /// let file = ptxkit::gguf::Gguf::read("model.gguf".as_ref())?;
    /// println!("{} tensors", file.tensors().len());
    /// # Ok::<(), ptxkit::gguf::GgufError>(())
    /// ```
    pub fn read(path: &Path) -> Result<Gguf, GgufError> {
        let bytes = std::fs::read(path).map_err(|source| GgufError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Gguf::parse(bytes)
    }

    /// Checks and indexes the bytes of a GGUF file (see [`read`](super::read) for what is
    /// checked).
    pub fn parse(bytes: Vec<u8>) -> Result<Gguf, GgufError> {
        super::read::parse(bytes)
    }

    /// The format version (3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The metadata, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The string value of `key`; an error names the key when it is absent or not a string.
    pub fn string(&self, key: &str) -> Result<&str, GgufError> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| wrong(key, "a string", v))
    }

    /// The integer value of `key` (any integer type, non-negative).
    ///
    /// ```
    /// use ptxkit::gguf::{Gguf, GgufError, GgufWriter, Value};
    /// let mut w = GgufWriter::new();
    /// w.set("llama.block_count", Value::U32(2))?;
    /// let file = Gguf::parse(w.to_bytes()?)?;
    /// assert_eq!(file.integer("llama.block_count")?, 2);
    /// assert!(matches!(file.integer("nope"), Err(GgufError::MissingKey(_))));
    /// # Ok::<(), GgufError>(())
    /// ```
    pub fn integer(&self, key: &str) -> Result<u64, GgufError> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| wrong(key, "a non-negative integer", v))
    }

    /// The float value of `key` (f32 or f64).
    pub fn float(&self, key: &str) -> Result<f64, GgufError> {
        let v = self.require(key)?;
        v.as_f64().ok_or_else(|| wrong(key, "a float", v))
    }

    fn require(&self, key: &str) -> Result<&Value, GgufError> {
        self.get(key)
            .ok_or_else(|| GgufError::MissingKey(key.to_owned()))
    }

    /// The tensor infos, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The info of tensor `name`.
    pub fn tensor(&self, name: &str) -> Result<&TensorInfo, GgufError> {
        self.tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| GgufError::MissingTensor(name.to_owned()))
    }

    /// The bytes of tensor `name` (their extent was checked when the file was read).
    pub fn tensor_data(&self, name: &str) -> Result<&[u8], GgufError> {
        let t = self.tensor(name)?;
        let start = self.data_start + t.offset as usize;
        Ok(&self.bytes[start..start + t.bytes() as usize])
    }

    /// The alignment of the data section and of every tensor in it.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }
}

fn wrong(key: &str, expected: &'static str, v: &Value) -> GgufError {
    GgufError::WrongValueType {
        key: key.to_owned(),
        expected,
        found: v.value_type().name(),
    }
}
