//! What can go wrong in a training run.

/// A training run's failure: an op or the runtime refused, the setup is invalid, the device
/// disagrees with the CPU reference, or the loss did not fall.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error(transparent)]
    Kernels(#[from] kernels::Error),
    #[error(transparent)]
    Runtime(#[from] kernel_runtime::Error),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error("invalid training setup: {0}")]
    Config(String),
    #[error("step {step}: the device's {quantity} is {got:.9e} but the CPU f64 reference gives {want:.9e} (relative error {rel_error:.2e}, tolerance {tolerance:.0e})")]
    ReferenceMismatch {
        step: u32,
        quantity: String,
        got: f64,
        want: f64,
        rel_error: f64,
        tolerance: f64,
    },
    #[error("the loss did not fall: {first:.6} at step {first_step}, {last:.6} at step {step}")]
    LossDidNotFall {
        first: f64,
        first_step: u32,
        last: f64,
        step: u32,
    },
    #[error("the loss fell from {first:.6} at step {first_step} to {last:.6} at step {step}, but a run of {min_steps} or more steps must end below {bound:.6}; lower the learning rate or train longer")]
    LossFellTooLittle {
        first: f64,
        first_step: u32,
        last: f64,
        step: u32,
        bound: f64,
        min_steps: u32,
    },
    #[error("rank {rank}'s weights differ from rank 0's at flat index {index}: the ranks must make identical updates; check that every rank ran the same steps with the same all-reduced gradients")]
    RanksDiverged { rank: usize, index: usize },
    #[error("{what} changed during QLoRA training, but the base must stay frozen")]
    FrozenBaseChanged { what: String },
    #[error("the loss is {loss} at step {step}: training diverged")]
    NonFiniteLoss { step: u32, loss: f64 },
}
