//! The `ptxkit` command line: `ptxkit train` trains a small transformer block on the best
//! device, checked against a CPU f64 reference; `ptxkit run` checks every sample on the best
//! device against its CPU reference; `ptxkit emit --targets sm_89,sm_121 --out DIR` writes the PTX of
//! every available kernel for each target and prints a resource table; `ptxkit catalog` and
//! `ptxkit targets` print the instruction catalog and the target table.

mod args;
mod catalog_cmd;
mod emit_cmd;
mod error;
mod run_cmd;
mod train_cmd;

use error::CliError;

const USAGE: &str = "usage:
  ptxkit train [--device best|cuda|emulator] [--steps N] [--log-every K]
      train a transformer block (RMSNorm, SwiGLU MLP, residual, classifier, cross-entropy,
      clipping, AdamW) on the GPU, or on the CPU emulator where none is present: 300 steps at
      4096 tokens × hidden 512 on a GPU, 40 small steps on the emulator; checks the first 3
      steps against a CPU f64 reference and fails if they differ or the loss does not fall
  ptxkit train --gpus N [--steps N] [--log-every K]
      the same block data-parallel on CUDA devices 0..N (one thread each, 4096 tokens per GPU,
      gradients averaged through NCCL inside the captured step); fails unless the loss falls
      and every GPU ends with bit-identical weights
  ptxkit run [--device best|cuda|emulator]
      run every sample kernel on the GPU (or, where none is present, the CPU emulator)
      against its CPU reference and print the errors
  ptxkit emit --targets sm_89,sm_121 [--out DIR] [--kernels NAME,NAME]
      write the PTX of every available kernel for each target into DIR (default target/ptx)
      and print registers, spills and shared memory from ptxas where it is installed
  ptxkit catalog      what each instruction form needs from the target
  ptxkit targets      the targets, their minimum PTX ISA and limits";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("train") => train_cmd::TrainArgs::parse(&argv[1..]).and_then(|a| train_cmd::run(&a)),
        Some("emit") => args::EmitArgs::parse(&argv[1..]).and_then(|a| emit_cmd::run(&a)),
        Some("run") => match argv.get(1..).unwrap_or_default() {
            [] => run_cmd::run(None),
            [flag, value] if flag == "--device" => run_cmd::run(Some(value)),
            other => Err(CliError::Usage(format!("unexpected arguments {other:?}"))),
        },
        Some("catalog") => {
            catalog_cmd::catalog();
            Ok(())
        }
        Some("targets") => {
            catalog_cmd::targets();
            Ok(())
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(CliError::Usage(format!("unknown command `{other}`"))),
        None => Err(CliError::Usage("no command given".into())),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        if matches!(e, CliError::Usage(_)) {
            eprintln!("{USAGE}");
        }
        std::process::exit(2);
    }
}
