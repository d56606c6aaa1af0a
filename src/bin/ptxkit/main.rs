//! The `ptxkit` command line: `ptxkit train` trains a small transformer block on the best
//! device, checked against a CPU f64 reference; `ptxkit run` checks every sample on the best
//! device against its CPU reference; `ptxkit emit --targets sm_89,sm_121 --out DIR` writes the PTX of
//! every available kernel for each target and prints a resource table; `ptxkit quantize` turns a
//! checkpoint into a GGUF file and `ptxkit generate` serves one; `ptxkit catalog` and
//! `ptxkit targets` print the instruction catalog and the target table.
//!
//! Exit status: 0 on success, 1 when the work failed, 2 for a usage error (`ptxkit --help`
//! says which is which).

mod args;
mod catalog_cmd;
mod emit_cmd;
mod error;
mod generate_cmd;
mod logging;
mod progress;
mod quantize_cmd;
mod run_cmd;
mod train_cmd;

use args::{Cli, Command};
use clap::Parser;

fn main() {
    let cli = Cli::parse();
    logging::init();
    let result = match &cli.command {
        Command::Train(a) => train_cmd::run(a),
        Command::Run(a) => run_cmd::run(a.device),
        Command::Emit(a) => emit_cmd::run(a),
        Command::Quantize(a) => quantize_cmd::run(a),
        Command::Generate(a) => generate_cmd::run(a),
        Command::Catalog => {
            catalog_cmd::catalog();
            Ok(())
        }
        Command::Targets => {
            catalog_cmd::targets();
            Ok(())
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
