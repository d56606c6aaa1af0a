//! Training a small transformer block end to end on a device with the op library only.
//!
//! The block is `h = x + W_down · (silu(W_gate · n) ⊙ (W_up · n))` with `n = rms_norm(x, γ)`,
//! followed by a classifier `logits = h · W_outᵀ` and a fused softmax cross-entropy against a
//! fixed target class per token. One step runs the forward, the backward (GEMMs in the NT, NN
//! and TN layouts, SwiGLU and RMSNorm backward, the residual's gradient), global-norm
//! clipping on the device and one AdamW launch over every weight, with no host round trip; on
//! a device it is captured once as a graph and replayed.
//!
//! The files, in the order a run meets them: `config.rs` (sizes and settings),
//! `problem.rs` (inputs, targets, initial weights), `params.rs` (the trained tensors and the
//! optimizer's flat layout), `device_model.rs` (the step on the device), `trainer.rs`
//! (pre-warm, capture, replay), `reference.rs` with `linalg.rs` (the same step on the CPU in
//! f64), `check.rs` (the comparison), `driver.rs` (a whole run, reported to an
//! `observer.rs`), `verdict.rs` (whether the loss fell enough). `ptxkit train` prints one.
//!
//! The decoder (`decoder/`, what `ptxkit train` trains by default) reuses the optimizer
//! layout, clipping, AdamW, graph capture, observer and verdict of the block.
//!
//! Data parallelism: `grad_reduce.rs` averages the gradient over the ranks inside the step,
//! `data_parallel.rs` runs one rank per GPU (`ptxkit train --gpus N`) and compares the ranks'
//! weights bit for bit at the end.

mod check;
mod config;
pub(crate) mod data_parallel;
pub mod decoder;
mod device_model;
mod driver;
mod error;
pub(crate) mod grad_reduce;
pub mod linalg;
pub(crate) mod observer;
mod params;
mod problem;
mod reference;
pub(crate) mod trainer;
pub(crate) mod verdict;

pub use check::{compare_with_reference, Check, LOSS_TOLERANCE, WEIGHT_TOLERANCE};
pub use config::{Shape, TrainConfig};
pub use data_parallel::{run_data_parallel, ParallelSummary, RANK_TIMEOUT};
pub use driver::{run, run_observed, Summary};
pub use error::TrainError;
pub use grad_reduce::BUCKET_ELEMS;
pub use observer::{Observer, Progress};
pub use params::Tensor;
pub use problem::Problem;
pub use reference::{RefStep, Reference};
pub use trainer::{Launch, Trainer};
pub use verdict::{judge_fine_tune, judge_loss, FULL_FALL_STEPS, LOSS_FALL};
