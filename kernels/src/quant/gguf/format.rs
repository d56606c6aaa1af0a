//! The three GGUF block formats this library reads, as data: bytes and weights per block.

/// A GGUF quantization format, as ggml defines it (`ggml-common.h`).
///
/// ```
/// use kernels::quant::gguf::GgufFormat;
/// assert_eq!(GgufFormat::Q4K.block_bytes(), 144);
/// assert_eq!(GgufFormat::Q4K.row_bytes(512), 288);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufFormat {
    /// 34 bytes per 32 weights: an f16 scale and 32 int8 ([`BlockQ8_0`](super::BlockQ8_0)).
    Q8_0,
    /// 144 bytes per 256 weights: f16 `d` and `dmin`, 6-bit scales and mins for 8 sub-blocks,
    /// 4-bit weights ([`BlockQ4K`](super::BlockQ4K)).
    Q4K,
    /// 210 bytes per 256 weights: 6-bit weights, int8 scales for 16 sub-blocks, an f16 `d`
    /// ([`BlockQ6K`](super::BlockQ6K)).
    Q6K,
}

impl GgufFormat {
    /// Every format, in a fixed order.
    pub const ALL: [GgufFormat; 3] = [GgufFormat::Q8_0, GgufFormat::Q4K, GgufFormat::Q6K];

    /// Bytes of one block.
    pub const fn block_bytes(self) -> usize {
        match self {
            GgufFormat::Q8_0 => 34,
            GgufFormat::Q4K => 144,
            GgufFormat::Q6K => 210,
        }
    }

    /// Weights of one block.
    pub const fn block_len(self) -> usize {
        match self {
            GgufFormat::Q8_0 => 32,
            GgufFormat::Q4K | GgufFormat::Q6K => 256,
        }
    }

    /// Bytes of a row of `cols` weights (`cols` a multiple of [`block_len`](Self::block_len)).
    pub const fn row_bytes(self, cols: usize) -> usize {
        cols / self.block_len() * self.block_bytes()
    }

    /// The name ggml gives the format (`q8_0`, `q4_K`, `q6_K`).
    pub const fn name(self) -> &'static str {
        match self {
            GgufFormat::Q8_0 => "q8_0",
            GgufFormat::Q4K => "q4_K",
            GgufFormat::Q6K => "q6_K",
        }
    }

    /// The kernels' format parameter `F` (0, 1, 2): also log2 of the runs of consecutive
    /// weights a thread decodes from one 32-weight chunk.
    pub(crate) const fn code(self) -> u32 {
        match self {
            GgufFormat::Q8_0 => 0,
            GgufFormat::Q4K => 1,
            GgufFormat::Q6K => 2,
        }
    }
}

impl std::fmt::Display for GgufFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
