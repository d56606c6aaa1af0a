//! What can be wrong with a GGUF file, each variant naming the part of the file at fault.

/// A GGUF file that cannot be read or written. Every reader check has its own variant, so a
/// caller (and a test) can tell which part of a malformed file was refused.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("could not read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("not a GGUF file: the first four bytes are {found:?}, not \"GGUF\"; pass a .gguf model file")]
    BadMagic { found: [u8; 4] },
    #[error("GGUF version {0} is not supported; only version 3 is read (re-convert the model with a current llama.cpp)")]
    UnsupportedVersion(u32),
    #[error("the file ends at byte {len} while reading {what} at byte {at}, which needs {needed} more bytes; the file is truncated")]
    Truncated {
        what: &'static str,
        at: usize,
        needed: u64,
        len: usize,
    },
    #[error("the header claims {count} {what}, but the {left} bytes left could hold at most {most}; the file is corrupt")]
    CountTooLarge {
        what: &'static str,
        count: u64,
        left: usize,
        most: u64,
    },
    #[error("{what} at byte {at} is not valid UTF-8; GGUF strings are UTF-8")]
    BadUtf8 { what: &'static str, at: usize },
    #[error("metadata key {key:?} has value type id {id}, which GGUF does not define (0 to 12)")]
    UnknownValueType { key: String, id: u32 },
    #[error("metadata key {key:?} holds a boolean byte {byte}; GGUF booleans are 0 or 1")]
    BadBool { key: String, byte: u8 },
    #[error("metadata key {key:?} nests arrays {depth} deep; at most {max} levels are read")]
    ArrayTooDeep {
        key: String,
        depth: usize,
        max: usize,
    },
    #[error("metadata key {0:?} appears twice; each key is written once")]
    DuplicateKey(String),
    #[error("metadata key {key:?} has type {found}, but {expected} is required")]
    WrongValueType {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("general.alignment is {0}; it must be a power of two (32 is the default)")]
    BadAlignment(u64),
    #[error("tensor {name:?} has {dims} dimensions; GGUF tensors have 1 to 4")]
    BadDimensionCount { name: String, dims: u32 },
    #[error("tensor {name:?} has a zero-sized or overflowing shape {shape:?}")]
    BadShape { name: String, shape: Vec<u64> },
    #[error("tensor {name:?} has type id {id}, which this reader does not know")]
    UnknownTensorType { name: String, id: u32 },
    #[error("tensor {name:?} is {ty} with ne[0] = {ne0}, not a multiple of its block of {block} elements")]
    NotWholeBlocks {
        name: String,
        ty: &'static str,
        ne0: u64,
        block: u64,
    },
    #[error("tensor name {name:?} is {len} bytes; GGUF names are at most {max}")]
    NameTooLong {
        name: String,
        len: usize,
        max: usize,
    },
    #[error("tensor {0:?} appears twice; each tensor name is written once")]
    DuplicateTensor(String),
    #[error("tensor {name:?} starts at data offset {offset}, which is not a multiple of the alignment {alignment}")]
    Misaligned {
        name: String,
        offset: u64,
        alignment: u64,
    },
    #[error("tensor {name:?} spans data bytes {start}..{end}, past the data section's {len} bytes; the file is truncated or its offsets are wrong")]
    TensorOutOfFile {
        name: String,
        start: u64,
        end: u64,
        len: u64,
    },
    #[error("tensors {first:?} and {second:?} overlap in the data section; each tensor needs its own bytes")]
    Overlap { first: String, second: String },
    #[error("tensor {name:?} is given {actual} bytes, but its shape and type need {expected}")]
    DataSize {
        name: String,
        expected: u64,
        actual: usize,
    },
    #[error(
        "array value for {key:?} mixes element types; every element of a GGUF array has one type"
    )]
    MixedArray { key: String },
    #[error("no tensor named {0:?} in the file; is it a model of the expected architecture?")]
    MissingTensor(String),
    #[error("no metadata key {0:?} in the file; is it a model of the expected architecture?")]
    MissingKey(String),
}
