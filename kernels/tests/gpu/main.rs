//! The GPU suite: each op family's emulator checks at real shapes on CUDA device 0, one module
//! per family. Each test prints `skipping: no CUDA driver/GPU present` and returns where there
//! is none. One binary, so that the GPU machine gets one file to run.

#[path = "../common_attention/mod.rs"]
mod common_attention;
#[path = "../common_flash_forward/mod.rs"]
mod common_flash_forward;
#[path = "../common_fp8/mod.rs"]
mod common_fp8;
#[path = "../common_rowwise/mod.rs"]
mod common_rowwise;
#[path = "../common_tensor/mod.rs"]
mod common_tensor;
#[path = "../common_tma_wgmma/mod.rs"]
mod common_tma_wgmma;

mod attention_backward;
mod attention_decode;
mod attention_forward;
mod cast;
mod clip;
mod clusters;
mod collectives;
mod cross_entropy;
mod elementwise;
mod embedding;
mod gemm_fp8;
mod gemm_tma_wgmma;
mod gguf;
mod gguf_q8;
mod layout;
mod line_info;
mod nf4;
mod norm;
mod optim;
mod rope;
mod softmax;
