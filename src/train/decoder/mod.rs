//! Training a Llama/Qwen2-style decoder ([`crate::model`]) on a device with the op library
//! only: fully with f32 master weights (the GEMMs on AdamW's bf16 copy of them in
//! [`Precision::Bf16`], or on the f32 weights as TF32), or QLoRA (an NF4 base, frozen, with
//! trained LoRA adapters). One step runs the forward (embedding, per layer RMSNorm, q/k/v
//! projections, RoPE, causal flash attention in bf16, o projection, residual, RMSNorm, SwiGLU
//! MLP, residual; final norm, LM head, fused cross-entropy against the next tokens), the
//! backward of each, global-norm clipping and one AdamW launch, with no host round trip; it
//! is captured once as a graph and replayed with each step's tokens copied in.
//!
//! The files, in the order a run meets them: `config.rs` (sizes and settings), `corpus.rs`
//! (the text and each step's windows), `params.rs` (what is trained), `weights.rs` and
//! `acts.rs` (the device buffers), `linear.rs` (a projection, dense or NF4 + LoRA),
//! `forward.rs`, `backward.rs` (and their bf16 forms `acts_bf16.rs`, `linear_bf16.rs`,
//! `forward_bf16.rs`, `backward_bf16.rs`), `device.rs` (the step), `trainer.rs` (pre-warm,
//! capture, replay, checkpoints through `state.rs`), `reference.rs` (the same step on the CPU
//! in f64), `check.rs` (the comparison), `driver.rs` (a whole run), `data_parallel.rs` (one
//! rank per GPU, the gradient averaged inside the step), `dump.rs` (one step written out for
//! the Hugging Face cross-check).

mod acts;
mod acts_bf16;
mod backward;
mod backward_bf16;
mod check;
mod config;
mod corpus;
mod data_parallel;
mod device;
mod driver;
mod dump;
mod forward;
mod forward_bf16;
mod linear;
mod linear_bf16;
mod params;
mod reference;
mod state;
mod trainer;
mod weights;

pub use check::{
    compare_decoder_with_reference, DECODER_BF16_GRAD_TOLERANCE, DECODER_BF16_LOSS_TOLERANCE,
    DECODER_BF16_SCORE_GRAD_TOLERANCE, DECODER_BF16_WEIGHT_TOLERANCE, DECODER_GRAD_TOLERANCE,
    DECODER_LOSS_TOLERANCE, DECODER_SCORE_GRAD_TOLERANCE, DECODER_WEIGHT_TOLERANCE,
};
pub use config::{DecoderConfig, Precision};
pub use corpus::{Corpus, TokenBatch};
pub use data_parallel::run_decoder_data_parallel;
pub use driver::{run_decoder, DecoderSummary, RunOptions};
pub use dump::{dump_step, QLORA_WARM_STEPS, STEP_FILE};
pub use params::{trainable, Mode, ParamId};
pub use reference::{DecoderRefStep, DecoderReference};
pub use state::{ADAPTER, ADAPTER_CONFIG, OPTIMIZER};
pub use trainer::DecoderTrainer;
