//! What is trained and how: the sizes of the block and the optimizer's settings, with one
//! preset for the CPU emulator and one for a GPU.

use super::error::TrainError;
use kernel_runtime::{Device, DeviceKind};
use kernels::optim::AdamWConfig;

/// The sizes of the block: `tokens` rows of `hidden` features, an MLP of `ffn` hidden units
/// and a classifier over `classes` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub tokens: usize,
    pub hidden: usize,
    pub ffn: usize,
    pub classes: usize,
}

impl Shape {
    /// Small enough for the CPU emulator: a step is a few hundred thousand multiply-adds.
    pub const SMALL: Shape = Shape {
        tokens: 16,
        hidden: 32,
        ffn: 64,
        classes: 24,
    };

    /// A GPU-sized block: about 22 GFLOP forward and 44 GFLOP backward per step.
    pub const LARGE: Shape = Shape {
        tokens: 4096,
        hidden: 512,
        ffn: 1408,
        classes: 1024,
    };
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens, hidden {}, ffn {}, {} classes",
            self.tokens, self.hidden, self.ffn, self.classes
        )
    }
}

/// Everything a training run needs besides the device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainConfig {
    pub shape: Shape,
    /// Steps to train.
    pub steps: u32,
    /// Seeds the inputs, the targets and the initial weights.
    pub seed: u64,
    pub adamw: AdamWConfig,
    /// Gradients are clipped to this global L2 norm.
    pub max_norm: f32,
    /// RMSNorm's epsilon.
    pub norm_eps: f32,
    /// Steps compared with the CPU f64 reference at the start.
    pub check_steps: u32,
    /// The loss is read back (and printed) every this many steps.
    pub log_every: u32,
    /// In a data-parallel run, average each gradient bucket on a second stream as soon as the
    /// backward has finished it, rather than all of them after the backward. Off by default:
    /// on NVLink-connected GPUs the forked graph cost more than it hid (BENCHMARKS.md, "Several
    /// GPUs").
    pub overlap_reduce: bool,
}

impl TrainConfig {
    /// The preset for `device`: [`Shape::SMALL`] for 40 steps on the emulator,
    /// [`Shape::LARGE`] for 300 steps on a GPU.
    ///
    /// ```
    /// let cfg = ptxkit::train::TrainConfig::for_device(&kernel_runtime::Device::emulator());
    /// assert_eq!(cfg.shape, ptxkit::train::Shape::SMALL);
    /// ```
    pub fn for_device(device: &Device) -> TrainConfig {
        match device.props().kind {
            DeviceKind::Emulator => TrainConfig::small(),
            _ => TrainConfig::large(),
        }
    }

    /// [`Shape::SMALL`], 40 steps.
    pub fn small() -> TrainConfig {
        TrainConfig {
            shape: Shape::SMALL,
            steps: 40,
            seed: 2026,
            adamw: AdamWConfig {
                lr: 2e-3,
                weight_decay: 0.01,
                ..AdamWConfig::default()
            },
            max_norm: 1.0,
            norm_eps: 1e-5,
            check_steps: 3,
            log_every: 4,
            overlap_reduce: false,
        }
    }

    /// [`Shape::LARGE`], 300 steps, a smaller learning rate (a wider block moves its logits
    /// faster per step).
    pub fn large() -> TrainConfig {
        TrainConfig {
            shape: Shape::LARGE,
            steps: 300,
            adamw: AdamWConfig {
                lr: 2e-4,
                weight_decay: 0.01,
                ..AdamWConfig::default()
            },
            // The mean gradient over 4096 tokens is smaller than over 16; clip low enough
            // that the first steps are clipped here too.
            max_norm: 0.25,
            log_every: 20,
            ..TrainConfig::small()
        }
    }

    /// Checks what the ops cannot: every size at least 1, and the steps.
    ///
    /// ```
    /// let mut cfg = ptxkit::train::TrainConfig::small();
    /// assert!(cfg.validate().is_ok());
    /// cfg.steps = 0;
    /// assert!(cfg.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), TrainError> {
        let s = self.shape;
        let sizes = [
            ("tokens", s.tokens),
            ("hidden", s.hidden),
            ("ffn", s.ffn),
            ("classes", s.classes),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(TrainError::Config(format!(
                "{name} is 0; every size must be at least 1"
            )));
        }
        if s.classes > i32::MAX as usize {
            return Err(TrainError::Config(format!(
                "{} classes do not fit the i32 targets",
                s.classes
            )));
        }
        if self.steps == 0 {
            return Err(TrainError::Config(
                "steps is 0; train for at least one step".into(),
            ));
        }
        if self.log_every == 0 {
            return Err(TrainError::Config(
                "log_every is 0; read the loss back at least every step count you choose (≥ 1)"
                    .into(),
            ));
        }
        Ok(())
    }
}
