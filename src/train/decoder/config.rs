//! What a decoder run trains and how: the model, the batch, the optimizer's settings.

use super::params::Mode;
use crate::model::ModelConfig;
use crate::train::TrainError;
use kernel_runtime::{Device, DeviceKind};
use kernels::optim::AdamWConfig;

/// The number format the decoder's GEMMs compute in. Either way the optimizer keeps f32
/// master weights and f32 moments, the residual stream, the norms and the loss are f32, and
/// attention runs in bf16.
///
/// ```
/// use ptxkit::train::decoder::Precision;
/// assert_eq!(Precision::Bf16.to_string(), "bf16");
/// assert_eq!(Precision::Tf32.to_string(), "tf32");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Mixed precision as autocast trains: the GEMMs read bf16 copies of the weights (AdamW
    /// writes them beside the f32 masters every step) and bf16 activations on bf16 tensor
    /// cores, accumulating in f32; weight gradients are written in f32. With QLoRA the NF4
    /// products, the adapters and their gradients are bf16.
    Bf16,
    /// Every GEMM reads the f32 weights and f32 activations, rounded to TF32 by the tensor
    /// cores.
    Tf32,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::Bf16 => "bf16",
            Precision::Tf32 => "tf32",
        })
    }
}

/// Everything a decoder training run needs besides the device and the text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecoderConfig {
    pub model: ModelConfig,
    /// Sequences per step, each `seq_len` tokens long (the batch is `seqs × seq_len` tokens).
    pub seqs: usize,
    pub seq_len: usize,
    pub mode: Mode,
    /// What the GEMMs compute in.
    pub precision: Precision,
    /// Steps to train.
    pub steps: u32,
    /// Seeds the initial weights and the windows each step samples from the text.
    pub seed: u64,
    pub adamw: AdamWConfig,
    /// Gradients are clipped to this global L2 norm.
    pub max_norm: f32,
    /// Steps compared with the CPU f64 reference at the start.
    pub check_steps: u32,
    /// The loss is read back (and printed) every this many steps.
    pub log_every: u32,
}

impl DecoderConfig {
    /// [`DecoderConfig::tiny`] on the emulator, [`DecoderConfig::small`] on a GPU.
    ///
    /// ```
    /// use ptxkit::train::decoder::DecoderConfig;
    /// let cfg = DecoderConfig::for_device(&kernel_runtime::Device::emulator());
    /// assert_eq!(cfg.model, ptxkit::model::ModelConfig::TINY);
    /// ```
    pub fn for_device(device: &Device) -> DecoderConfig {
        match device.props().kind {
            DeviceKind::Emulator => DecoderConfig::tiny(),
            _ => DecoderConfig::small(),
        }
    }

    /// [`ModelConfig::TINY`], two sequences of 32 tokens, 8 steps, in bf16: seconds on the
    /// emulator (which runs the bf16 step faster than the TF32 one).
    pub fn tiny() -> DecoderConfig {
        DecoderConfig {
            model: ModelConfig::TINY,
            seqs: 2,
            seq_len: 32,
            mode: Mode::Full,
            precision: Precision::Bf16,
            steps: 8,
            seed: 2026,
            adamw: AdamWConfig {
                lr: 3e-3,
                weight_decay: 0.01,
                ..AdamWConfig::default()
            },
            max_norm: 1.0,
            check_steps: 2,
            log_every: 2,
        }
    }

    /// [`ModelConfig::SMALL`], 8 sequences of 512 tokens, 300 steps, in bf16; one step checked
    /// against the reference (the f64 reference of a 4096-token step takes the host seconds).
    pub fn small() -> DecoderConfig {
        DecoderConfig {
            model: ModelConfig::SMALL,
            seqs: 8,
            seq_len: 512,
            steps: 300,
            check_steps: 1,
            adamw: AdamWConfig {
                lr: 1e-3,
                weight_decay: 0.01,
                ..AdamWConfig::default()
            },
            log_every: 20,
            ..DecoderConfig::tiny()
        }
    }

    /// Tokens per step.
    pub fn tokens(&self) -> usize {
        self.seqs * self.seq_len
    }

    /// Checks what the ops cannot: the model, the batch, the adapters' sizes.
    ///
    /// ```
    /// let mut cfg = ptxkit::train::decoder::DecoderConfig::tiny();
    /// assert!(cfg.validate().is_ok());
    /// cfg.seq_len = 33; // longer than the model's max_seq
    /// assert!(cfg.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), TrainError> {
        self.model
            .validate()
            .map_err(|e| TrainError::Config(e.to_string()))?;
        let bad = |s: String| Err(TrainError::Config(s));
        if self.seqs == 0 || self.seq_len == 0 {
            return bad("seqs and seq_len must be at least 1".into());
        }
        if self.seq_len > self.model.max_seq {
            return bad(format!(
                "seq_len {} exceeds the model's max_seq {}; train on shorter windows",
                self.seq_len, self.model.max_seq
            ));
        }
        if self.steps == 0 || self.log_every == 0 {
            return bad("steps and log_every must be at least 1".into());
        }
        if let Mode::QLora { rank, alpha } = self.mode {
            if rank == 0 || !(alpha.is_finite() && alpha > 0.0) {
                return bad(format!(
                    "LoRA rank {rank} and alpha {alpha}: the rank must be at least 1 and alpha positive"
                ));
            }
            let widths = [self.model.hidden, self.model.ffn];
            if let Some(w) = widths.iter().find(|w| !w.is_multiple_of(64)) {
                return bad(format!(
                    "QLoRA quantizes the projections in blocks of 64 along their input, but a width is {w}; use hidden and ffn sizes that are multiples of 64"
                ));
            }
        }
        Ok(())
    }
}
