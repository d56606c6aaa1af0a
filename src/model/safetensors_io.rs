//! Named f32 tensors to and from a safetensors file: F32 on write, F32 or BF16 on read, every
//! failure a typed error naming the file and, where there is one, the tensor.

use super::error::ModelError;
use safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A tensor on the host: its shape and its elements, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl HostTensor {
    /// A tensor of `shape` holding `data` (which must have the shape's element count).
    ///
    /// ```
    /// let t = ptxkit::model::HostTensor::new(vec![2, 3], vec![0.0; 6]);
    /// assert_eq!(t.len(), 6);
    /// ```
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> HostTensor {
        HostTensor { shape, data }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Tensors by name, in name order.
pub type NamedTensors = BTreeMap<String, HostTensor>;

impl View for &HostTensor {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn data_len(&self) -> usize {
        self.data.len() * 4
    }
}

/// Writes `tensors` as F32 to `path` with `metadata` in the header. Every tensor's shape is
/// checked against its data first; the file appears whole or not at all (written beside it,
/// then renamed).
///
/// ```
/// use ptxkit::model::{read_safetensors, write_safetensors, HostTensor, NamedTensors};
/// # fn main() -> Result<(), ptxkit::model::ModelError> {
/// let dir = std::env::temp_dir().join(format!("ptxkit-doc-st-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let mut t = NamedTensors::new();
/// t.insert("w".into(), HostTensor::new(vec![2], vec![1.5, -2.0]));
/// write_safetensors(&dir.join("a.safetensors"), &t, None)?;
/// assert_eq!(read_safetensors(&dir.join("a.safetensors"))?, t);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(()) }
/// ```
pub fn write_safetensors(
    path: &Path,
    tensors: &NamedTensors,
    metadata: Option<HashMap<String, String>>,
) -> Result<(), ModelError> {
    for (name, t) in tensors {
        if t.shape.iter().product::<usize>() != t.data.len() {
            return Err(ModelError::Config(format!(
                "tensor `{name}` has shape {:?} but {} elements; give it data of its shape",
                t.shape,
                t.data.len()
            )));
        }
    }
    let bytes = safetensors::tensor::serialize(tensors.iter(), metadata).map_err(|e| {
        ModelError::Safetensors {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }
    })?;
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes).map_err(|e| ModelError::io(&partial, e))?;
    std::fs::rename(&partial, path).map_err(|e| ModelError::io(path, e))
}

/// Every tensor of the safetensors file at `path`, widened to f32 (F32 and BF16 are read; any
/// other dtype is an error naming the tensor, as is a file cut short).
pub fn read_safetensors(path: &Path) -> Result<NamedTensors, ModelError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let file = open(path, &bytes)?;
    let mut out = NamedTensors::new();
    for (name, view) in file.iter() {
        out.insert(name.to_string(), widen(path, name, &view)?);
    }
    Ok(out)
}

/// Reads the safetensors file at `path` and hands each tensor `wanted` gives a shape for to
/// the check: missing, misshapen and undecodable tensors are errors naming them. Tensors not
/// wanted are skipped.
pub(crate) fn read_expected(
    path: &Path,
    wanted: &[(String, Vec<usize>)],
) -> Result<NamedTensors, ModelError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let file = open(path, &bytes)?;
    let mut out = NamedTensors::new();
    for (name, shape) in wanted {
        let view = file.tensor(name).map_err(|_| ModelError::MissingTensor {
            path: path.to_path_buf(),
            name: name.clone(),
        })?;
        if view.shape() != shape.as_slice() {
            return Err(ModelError::TensorShape {
                path: path.to_path_buf(),
                name: name.clone(),
                expected: shape.clone(),
                actual: view.shape().to_vec(),
            });
        }
        out.insert(name.clone(), widen(path, name, &view)?);
    }
    Ok(out)
}

fn open<'a>(path: &Path, bytes: &'a [u8]) -> Result<SafeTensors<'a>, ModelError> {
    SafeTensors::deserialize(bytes).map_err(|e| diagnose(path, bytes, e))
}

fn widen(
    path: &Path,
    name: &str,
    view: &safetensors::tensor::TensorView<'_>,
) -> Result<HostTensor, ModelError> {
    let data = match view.dtype() {
        Dtype::F32 => view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::BF16 => view
            .data()
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect(),
        other => {
            return Err(ModelError::TensorDtype {
                path: path.to_path_buf(),
                name: name.into(),
                dtype: format!("{other:?}"),
            })
        }
    };
    Ok(HostTensor::new(view.shape().to_vec(), data))
}

/// Turns a refused file into an error that names the tensor cut short, where the header is
/// whole but the data is not.
fn diagnose(path: &Path, bytes: &[u8], e: SafeTensorError) -> ModelError {
    let fallback = || ModelError::Safetensors {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let Some(len) = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize)
    else {
        return fallback();
    };
    let Some(header) = 8usize.checked_add(len).and_then(|end| bytes.get(8..end)) else {
        return fallback();
    };
    let Ok(entries) = serde_json::from_slice::<HashMap<String, serde_json::Value>>(header) else {
        return fallback();
    };
    let have = bytes.len() - 8 - len;
    let end_of = |v: &serde_json::Value| v["data_offsets"][1].as_u64().map(|e| e as usize);
    let cut = entries
        .iter()
        .filter(|(name, _)| name.as_str() != "__metadata__")
        .filter_map(|(name, v)| end_of(v).map(|end| (end, name)))
        .filter(|&(end, _)| end > have)
        .min();
    match cut {
        Some((needed, name)) => ModelError::Truncated {
            path: path.to_path_buf(),
            name: name.clone(),
            needed,
            have,
        },
        None => fallback(),
    }
}
