//! The type ids a GGUF file uses, as data: metadata value types and ggml tensor types with
//! their block sizes (`ggml.h`'s `ggml_type`, `ggml.c`'s type traits).

/// The type of a metadata value (`gguf_metadata_value_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    /// Every type, indexed by its id.
    const BY_ID: [ValueType; 13] = [
        ValueType::U8,
        ValueType::I8,
        ValueType::U16,
        ValueType::I16,
        ValueType::U32,
        ValueType::I32,
        ValueType::F32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
    ];

    /// The type with file id `id`, if GGUF defines one.
    ///
    /// ```
    /// use ptxkit::gguf::ValueType;
    /// assert_eq!(ValueType::from_id(8), Some(ValueType::String));
    /// assert_eq!(ValueType::from_id(13), None);
    /// ```
    pub fn from_id(id: u32) -> Option<ValueType> {
        Self::BY_ID.get(id as usize).copied()
    }

    /// The id written to the file.
    ///
    /// ```
    /// assert_eq!(ptxkit::gguf::ValueType::F64.id(), 12);
    /// ```
    pub fn id(self) -> u32 {
        Self::BY_ID
            .iter()
            .position(|&t| t == self)
            .expect("every type is in the table") as u32
    }

    /// The fewest bytes a value of this type takes in the file (a string's or array's length
    /// field alone), which bounds how many can fit in what is left.
    pub(crate) fn min_bytes(self) -> u64 {
        match self {
            ValueType::U8 | ValueType::I8 | ValueType::Bool => 1,
            ValueType::U16 | ValueType::I16 => 2,
            ValueType::U32 | ValueType::I32 | ValueType::F32 => 4,
            ValueType::U64 | ValueType::I64 | ValueType::F64 | ValueType::String => 8,
            ValueType::Array => 12,
        }
    }

    /// The type's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::U8 => "u8",
            ValueType::I8 => "i8",
            ValueType::U16 => "u16",
            ValueType::I16 => "i16",
            ValueType::U32 => "u32",
            ValueType::I32 => "i32",
            ValueType::F32 => "f32",
            ValueType::Bool => "bool",
            ValueType::String => "string",
            ValueType::Array => "array",
            ValueType::U64 => "u64",
            ValueType::I64 => "i64",
            ValueType::F64 => "f64",
        }
    }
}

/// A ggml tensor type: how a tensor's elements are stored, in blocks of
/// [`block_len`](Self::block_len) elements taking [`block_bytes`](Self::block_bytes) bytes.
///
/// ```
/// use ptxkit::gguf::TensorType;
/// assert_eq!(TensorType::from_id(12), Some(TensorType::Q4K));
/// assert_eq!(TensorType::Q4K.bytes_for(512), Some(288));
/// assert_eq!(TensorType::Q4K.bytes_for(100), None); // not whole blocks
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    I8,
    I16,
    I32,
    I64,
    F64,
    Bf16,
}

/// One row of the type table: id, name, elements per block, bytes per block.
struct TypeFacts {
    ty: TensorType,
    id: u32,
    name: &'static str,
    block_len: u64,
    block_bytes: u64,
}

const fn facts(
    ty: TensorType,
    id: u32,
    name: &'static str,
    block_len: u64,
    block_bytes: u64,
) -> TypeFacts {
    TypeFacts {
        ty,
        id,
        name,
        block_len,
        block_bytes,
    }
}

/// The types this reader knows, with ggml's ids and block sizes.
const TYPES: [TypeFacts; 20] = [
    facts(TensorType::F32, 0, "f32", 1, 4),
    facts(TensorType::F16, 1, "f16", 1, 2),
    facts(TensorType::Q4_0, 2, "q4_0", 32, 18),
    facts(TensorType::Q4_1, 3, "q4_1", 32, 20),
    facts(TensorType::Q5_0, 6, "q5_0", 32, 22),
    facts(TensorType::Q5_1, 7, "q5_1", 32, 24),
    facts(TensorType::Q8_0, 8, "q8_0", 32, 34),
    facts(TensorType::Q8_1, 9, "q8_1", 32, 36),
    facts(TensorType::Q2K, 10, "q2_K", 256, 84),
    facts(TensorType::Q3K, 11, "q3_K", 256, 110),
    facts(TensorType::Q4K, 12, "q4_K", 256, 144),
    facts(TensorType::Q5K, 13, "q5_K", 256, 176),
    facts(TensorType::Q6K, 14, "q6_K", 256, 210),
    facts(TensorType::Q8K, 15, "q8_K", 256, 292),
    facts(TensorType::I8, 24, "i8", 1, 1),
    facts(TensorType::I16, 25, "i16", 1, 2),
    facts(TensorType::I32, 26, "i32", 1, 4),
    facts(TensorType::I64, 27, "i64", 1, 8),
    facts(TensorType::F64, 28, "f64", 1, 8),
    facts(TensorType::Bf16, 30, "bf16", 1, 2),
];

impl TensorType {
    fn facts(self) -> &'static TypeFacts {
        TYPES
            .iter()
            .find(|f| f.ty == self)
            .expect("every type is in the table")
    }

    /// The type with ggml id `id`, if this reader knows it.
    pub fn from_id(id: u32) -> Option<TensorType> {
        TYPES.iter().find(|f| f.id == id).map(|f| f.ty)
    }

    /// ggml's id, written to the file.
    ///
    /// ```
    /// assert_eq!(ptxkit::gguf::TensorType::Q6K.id(), 14);
    /// ```
    pub fn id(self) -> u32 {
        self.facts().id
    }

    /// ggml's name (`q4_K`, `f32`, …).
    ///
    /// ```
    /// assert_eq!(ptxkit::gguf::TensorType::Q8_0.name(), "q8_0");
    /// ```
    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// Elements per block.
    pub fn block_len(self) -> u64 {
        self.facts().block_len
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> u64 {
        self.facts().block_bytes
    }

    /// Bytes of `elements` elements, or `None` when they are not whole blocks or the size
    /// overflows.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        if !elements.is_multiple_of(self.block_len()) {
            return None;
        }
        (elements / self.block_len()).checked_mul(self.block_bytes())
    }

    /// The matching format of `kernels::quant::gguf`, for the types its kernels decode.
    ///
    /// ```
    /// use ptxkit::gguf::TensorType;
    /// use ptxkit::kernels::quant::gguf::GgufFormat;
    /// assert_eq!(TensorType::Q6K.quant_format(), Some(GgufFormat::Q6K));
    /// assert_eq!(TensorType::F32.quant_format(), None);
    /// ```
    pub fn quant_format(self) -> Option<kernels::quant::gguf::GgufFormat> {
        use kernels::quant::gguf::GgufFormat;
        match self {
            TensorType::Q8_0 => Some(GgufFormat::Q8_0),
            TensorType::Q4K => Some(GgufFormat::Q4K),
            TensorType::Q6K => Some(GgufFormat::Q6K),
            _ => None,
        }
    }

    /// The tensor type of a `kernels::quant::gguf` format.
    pub fn from_quant_format(format: kernels::quant::gguf::GgufFormat) -> TensorType {
        use kernels::quant::gguf::GgufFormat;
        match format {
            GgufFormat::Q8_0 => TensorType::Q8_0,
            GgufFormat::Q4K => TensorType::Q4K,
            GgufFormat::Q6K => TensorType::Q6K,
        }
    }
}

impl std::fmt::Display for TensorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
