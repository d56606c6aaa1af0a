//! The command line's grammar, declared with clap: every subcommand has `--help`, and an
//! unknown flag or a bad value is a usage error (exit status 2) that names the fix.

use clap::{Args, Parser, Subcommand, ValueEnum};
use ptxkit::dsl::Target;
use std::path::PathBuf;

/// The exit statuses, shown under `ptxkit --help`.
const EXIT_STATUS: &str = "Exit status:
  0  success
  1  the work failed: a sample missed its reference, training disagreed with the CPU
     reference or its loss did not fall, a file could not be read or written, nothing could
     be emitted
  2  usage error: an unknown subcommand or flag, a missing or malformed value, an unknown
     kernel name

Logs: RUST_LOG=ptxkit=debug shows module loads, run-time PTX emission, JIT and launches.";

/// A Rust toolchain for GPU kernels: train a decoder, check the sample kernels, and
/// emit PTX for any SM target.
#[derive(Debug, Parser)]
#[command(name = "ptxkit", version, after_help = EXIT_STATUS)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Train a Llama-style decoder (or, with --model block, one transformer block) on the
    /// GPU, or on the CPU emulator where none is present, with the whole step captured as
    /// one graph.
    ///
    /// The decoder: 8 layers × hidden 512 on 8 × 512 tokens for 300 steps on a GPU (the first
    /// checked against a CPU f64 reference), the 2-layer tiny model on 2 × 32 tokens for 8
    /// steps on the emulator (the first 2 checked). The run fails if they differ or the loss did
    /// not fall.
    #[command(after_help = EXIT_STATUS)]
    Train(TrainArgs),
    /// Run every sample kernel on the GPU (or, where none is present, the CPU emulator)
    /// against its CPU reference and print the errors.
    #[command(after_help = EXIT_STATUS)]
    Run(RunArgs),
    /// Write the PTX of every available kernel for each target and print registers, spills
    /// and shared memory from ptxas where it is installed (needs no GPU).
    #[command(after_help = EXIT_STATUS)]
    Emit(EmitArgs),
    /// Quantize a training checkpoint (`model.safetensors` + `config.json`) into a GGUF
    /// file of the `llama` architecture, with llama.cpp's tensor names and Q4_K_M mix.
    #[command(after_help = EXIT_STATUS)]
    Quantize(QuantizeArgs),
    /// Generate text from a GGUF model: prefill with flash attention, decode over a paged KV
    /// cache with continuous batching and graph-captured steps; prints each completion and
    /// tokens/s.
    #[command(after_help = EXIT_STATUS)]
    Generate(GenerateArgs),
    /// Print what each instruction form needs from the target.
    Catalog,
    /// Print the targets, their minimum PTX ISA and limits.
    Targets,
}

/// Which device runs the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DeviceChoice {
    /// The GPU if one is present, else the CPU emulator.
    #[default]
    Best,
    /// CUDA device 0; an error where there is none.
    Cuda,
    /// The CPU emulator.
    Emulator,
}

/// What `ptxkit train` trains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ModelChoice {
    /// A Llama-style decoder on byte-level tokens of a text (the repository's own docs by
    /// default).
    #[default]
    Decoder,
    /// One transformer MLP block on a synthetic classification task.
    Block,
}

/// What the decoder's GEMMs compute in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionChoice {
    /// bf16 tensor cores on bf16 weight copies and activations, f32 master weights, AdamW
    /// and residual stream (mixed precision, as autocast trains).
    Bf16,
    /// TF32 tensor cores on f32 weights and activations.
    Tf32,
}

impl From<PrecisionChoice> for ptxkit::train::decoder::Precision {
    fn from(c: PrecisionChoice) -> Self {
        match c {
            PrecisionChoice::Bf16 => ptxkit::train::decoder::Precision::Bf16,
            PrecisionChoice::Tf32 => ptxkit::train::decoder::Precision::Tf32,
        }
    }
}

/// Arguments of `ptxkit train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Which device runs the kernels.
    #[arg(long, value_enum, default_value_t)]
    pub device: DeviceChoice,
    /// What to train.
    #[arg(long, value_enum, default_value_t)]
    pub model: ModelChoice,
    /// Steps to train (default: 300 on a GPU; 8 for the decoder and 40 for the block on the
    /// emulator).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub steps: Option<u32>,
    /// Read the loss back and print it every K steps.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub log_every: Option<u32>,
    /// Train the decoder on this text file's bytes instead of the built-in docs.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Write decoder checkpoints (model.safetensors, config.json, optimizer.safetensors; with
    /// --qlora the adapters in peft's form) into DIR at the end of the run.
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// Also write a checkpoint every K steps.
    #[arg(long, value_name = "K", requires = "checkpoint", value_parser = clap::value_parser!(u32).range(1..))]
    pub checkpoint_every: Option<u32>,
    /// Continue the decoder run checkpointed in DIR (its weights, optimizer state, step and
    /// seed), taking the steps an uninterrupted run would have taken.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Start from the model checkpointed in DIR (by `--checkpoint`, or any Llama/Qwen2
    /// safetensors checkpoint of a size the kernels take), with fresh optimizer state; with
    /// --qlora it is the frozen base.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub base: Option<PathBuf>,
    /// QLoRA: quantize the decoder's projections to NF4 and freeze them (and the embedding,
    /// norms and head); train LoRA adapters on q, k, v, o, gate, up and down.
    #[arg(long)]
    pub qlora: bool,
    /// What the decoder's GEMMs compute in.
    #[arg(long, value_enum, default_value_t = PrecisionChoice::Bf16)]
    pub precision: PrecisionChoice,
    /// The adapters' rank.
    #[arg(long, value_name = "R", requires = "qlora", value_parser = clap::value_parser!(u32).range(1..))]
    pub lora_rank: Option<u32>,
    /// The adapters' alpha (their output is scaled by alpha / rank).
    #[arg(long, value_name = "A", requires = "qlora")]
    pub lora_alpha: Option<f32>,
    /// Write one decoder step for `scripts/crosscheck_hf.py` into DIR: the checkpoint the
    /// step starts from, and the batch's tokens, logits, loss and gradients
    /// (`step.safetensors`); then exit.
    #[arg(long, value_name = "DIR")]
    pub dump_step: Option<PathBuf>,
    /// Train data-parallel on CUDA devices 0..N, one thread each, with the GPU preset's batch
    /// on every GPU and the gradients averaged through NCCL inside the captured step.
    #[arg(long, value_name = "N", conflicts_with = "device", value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus: Option<u32>,
    /// With `--model block --gpus`, average each gradient bucket on a second stream beside the
    /// rest of the backward instead of all of them after it.
    #[arg(long, requires = "gpus")]
    pub overlap: bool,
}

/// The GGUF file types `ptxkit quantize` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum QuantChoice {
    /// llama.cpp's Q4_K_M: Q4_K, with Q6_K for the output head and half of the attn_v and
    /// ffn_down layers.
    #[default]
    #[value(name = "q4_k_m")]
    Q4KM,
    /// Every weight Q8_0.
    #[value(name = "q8_0")]
    Q8_0,
    /// Every weight Q6_K.
    #[value(name = "q6_k")]
    Q6K,
}

/// Arguments of `ptxkit quantize`.
#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The checkpoint directory: `model.safetensors` (F32, Hugging Face Llama names) and
    /// `config.json`.
    #[arg(long, value_name = "DIR")]
    pub checkpoint: PathBuf,
    /// The GGUF file to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The file type.
    #[arg(long = "type", value_enum, default_value_t)]
    pub quant: QuantChoice,
}

/// Arguments of `ptxkit generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The GGUF model (from `ptxkit quantize`).
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// A prompt; repeat the flag for several, served together with continuous batching.
    #[arg(long, required = true, value_name = "TEXT")]
    pub prompt: Vec<String>,
    /// Most tokens to generate per prompt.
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f32,
    /// Sample only from the K most likely tokens (0: all).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub top_k: u32,
    /// Sample only from the most likely tokens whose probabilities add up to P.
    #[arg(long, default_value_t = 1.0, value_name = "P")]
    pub top_p: f32,
    /// Seeds the sampling (prompt i uses seed + i), so a run repeats exactly.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most sequences decoded together (1 to 16).
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub max_batch: u32,
    /// Keep generating past the end-of-sequence token.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Write the logits after each prompt's last token to FILE (vocab little-endian f32 per
    /// prompt, in prompt order), for `scripts/crosscheck_gguf.py`.
    #[arg(long, value_name = "FILE")]
    pub logits_out: Option<PathBuf>,
    /// Which device runs the kernels.
    #[arg(long, value_enum, default_value_t)]
    pub device: DeviceChoice,
}

/// Arguments of `ptxkit run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Which device runs the kernels.
    #[arg(long, value_enum, default_value_t)]
    pub device: DeviceChoice,
}

/// Arguments of `ptxkit emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// Targets to emit for, comma-separated, e.g. sm_89,sm_121 (`ptxkit targets` lists them).
    #[arg(long, required = true, value_delimiter = ',', value_name = "TARGETS")]
    pub targets: Vec<Target>,
    /// Directory the `<kernel>@<target>.ptx` files are written to.
    #[arg(long, value_name = "DIR", default_value = "target/ptx")]
    pub out: PathBuf,
    /// Only these kernels, comma-separated (default: every available kernel).
    #[arg(long, value_delimiter = ',', value_name = "NAME,NAME")]
    pub kernels: Option<Vec<String>>,
}
