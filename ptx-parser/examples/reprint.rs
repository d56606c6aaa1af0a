//! Parses a PTX file and prints it back:
//! `cargo run -p ptx-parser --example reprint -- [--canonical] in.ptx out.ptx`.
//!
//! `--canonical` forgets each node's source text first, so every node prints from the AST.
//! Handy for checking the printer against ptxas: assemble both files and compare the SASS.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let canonical = args.first().is_some_and(|a| a == "--canonical");
    if canonical {
        args.remove(0);
    }
    let [input, output] = args.as_slice() else {
        eprintln!("usage: reprint [--canonical] IN.ptx OUT.ptx");
        return ExitCode::FAILURE;
    };
    let text = match std::fs::read_to_string(input) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cannot read {input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut module = match ptx_parser::parse_module(&text) {
        Ok(module) => module,
        Err(e) => {
            eprintln!("{input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if canonical {
        module.clear_verbatim();
    }
    if let Err(e) = std::fs::write(output, ptx_parser::print_module(&module)) {
        eprintln!("cannot write {output}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
