//! PTX written by the ptxkit emitter (`kernel_dsl::emit`) prints back byte-for-byte, for every
//! sample kernel and every target it can be emitted for, alone and all in one module.

use kernel_dsl::emit::{emit, emit_module};
use kernel_dsl::samples;
use kernel_dsl::Target;

fn assert_byte_identical(what: &str, ptx: &str) {
    let module = ptx_parser::parse_module(ptx).unwrap_or_else(|e| panic!("{what}: {e}\n{ptx}"));
    let printed = ptx_parser::print_module(&module);
    assert_byte_identical_text(what, &printed, ptx);
    assert_canonical_byte_identical(what, ptx);
    let again = ptx_parser::parse_module(&printed).expect("printed text parses");
    assert_eq!(module, again, "{what}");
}

/// Emitter output prints back byte-for-byte from the AST alone (source text forgotten), so
/// an edited module still prints in the emitter's layout.
fn assert_canonical_byte_identical(what: &str, ptx: &str) {
    let mut module = ptx_parser::parse_module(ptx).expect("parses");
    module.clear_verbatim();
    assert_byte_identical_text(what, &ptx_parser::print_module(&module), ptx);
}

fn assert_byte_identical_text(what: &str, printed: &str, ptx: &str) {
    if printed != ptx {
        let line = printed
            .lines()
            .zip(ptx.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| printed.lines().count().min(ptx.lines().count()));
        panic!(
            "{what} differs at line {}:\n printed: {:?}\n emitted: {:?}",
            line + 1,
            printed.lines().nth(line),
            ptx.lines().nth(line)
        );
    }
}

#[test]
fn every_sample_kernel_prints_back_byte_for_byte_on_every_target() {
    let mut checked = 0;
    for sample in samples::all() {
        for target in sample.targets_in(&Target::ALL) {
            let ptx =
                emit(&sample.kernel, target).expect("targets_in only lists emittable targets");
            assert_byte_identical(&format!("{} for {target}", sample.kernel.name), &ptx);
            checked += 1;
        }
    }
    assert!(
        checked >= samples::all().len(),
        "only {checked} modules checked"
    );
}

#[test]
fn a_module_of_all_plain_samples_prints_back_byte_for_byte() {
    let kernels: Vec<_> = samples::all()
        .into_iter()
        .filter(|s| !s.targets_in(&[Target::Sm80]).is_empty())
        .map(|s| s.kernel)
        .collect();
    assert!(kernels.len() >= 2);
    let ptx = emit_module(&kernels, Target::Sm80).expect("emits");
    assert_byte_identical("all sm_80 samples", &ptx);
}

#[test]
fn emitted_instructions_read_as_known_opcodes() {
    for sample in samples::all() {
        let target = sample.min_target;
        let ptx = emit(&sample.kernel, target).expect("emits for its minimum target");
        let module = ptx_parser::parse_module(&ptx).expect("parses");
        let f = module
            .function(&sample.kernel.name)
            .expect("kernel present");
        let mut stack = vec![f.body.as_ref().expect("body")];
        while let Some(block) = stack.pop() {
            for s in &block.statements {
                match &s.kind {
                    ptx_parser::StatementKind::Instruction(i) => assert!(
                        !matches!(i.opcode, ptx_parser::Opcode::Other(_)),
                        "{}: unknown opcode `{}`",
                        sample.kernel.name,
                        i.opcode
                    ),
                    ptx_parser::StatementKind::Block(b) => stack.push(b),
                    _ => {}
                }
            }
        }
    }
}
