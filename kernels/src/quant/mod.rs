//! Quantized weights: storage formats, their dequantization and the products that read them.

pub mod gguf;
