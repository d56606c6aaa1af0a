//! Quantized weight formats and the products that read them without writing the weight out.
//!
//! ## NF4 ([`nf4`])
//!
//! The 4-bit NormalFloat format of QLoRA, byte for byte as bitsandbytes stores it: 16 code
//! values, two codes per byte with the first element in the high nibble, an f32 absmax per
//! block of 64 weights, and optionally the absmax values themselves quantized to 8 bits in
//! blocks of 256 (double quantization). [`nf4::Nf4Weight`] holds a frozen `[N, K]` weight on
//! the device; [`nf4::matmul`] is `y = x·Wᵀ` with the dequantization fused, and
//! [`nf4::matmul_input_grad`] is the input gradient `dx = dy·W` through the same weight.
//!
//! ## GGUF ([`gguf`])
//!
//! ggml's block formats Q8_0, Q4_K and Q6_K, byte for byte as GGUF files store them
//! ([`gguf::GgufFormat`]); [`gguf::GgufWeights`] holds a quantized `[N, K]` weight on the
//! device, [`gguf::gemv`] is the decode product for up to 16 rows (with
//! [`gguf::gemv_rms_norm`], RMSNorm fused in front), and [`gguf::prefill`] dequantizes to bf16
//! and runs the GEMM.

pub mod gguf;
pub mod nf4;

/// Weight loads a lane of a decode GEMV has in flight before it decodes the first, for an
/// instance of `mt` rows of `x`: at one row the GEMVs are bound by the weight bytes in flight,
/// and with more rows the accumulators take the registers the loads would.
pub(crate) fn loads_in_flight(mt: u32) -> u32 {
    match mt {
        1 => 4,
        4 => 2,
        _ => 1,
    }
}
