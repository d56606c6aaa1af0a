//! Every fixture under `tests/fixtures/` parses and prints back byte-for-byte; printed in the
//! canonical layout (source text forgotten) it parses to an equal AST, and fixtures in the
//! emitter's style (`emitter_*.ptx`) print back byte-for-byte even then.
//!
//! Fixtures: `nvcc_*` written by nvcc 13.5 (`nvcc -ptx -arch=sm_90`) from `fixtures/src/*.cu`,
//! `triton_*` by Triton 3.9 (`fixtures/make_triton_fixture.py`),
//! `emitter_*` in the ptxkit emitter's layout.

use std::path::Path;

fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("tests/fixtures exists")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "ptx").then(|| {
                let name = path.file_name()?.to_string_lossy().into_owned();
                Some((name, std::fs::read_to_string(&path).ok()?))
            })?
        })
        .collect();
    out.sort();
    out
}

#[test]
fn fixtures_include_nvcc_and_triton_output() {
    let names: Vec<String> = fixtures().into_iter().map(|(n, _)| n).collect();
    assert!(names.iter().any(|n| n.starts_with("nvcc_")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("triton_")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("emitter_")), "{names:?}");
}

#[test]
fn every_fixture_round_trips_to_an_equal_ast() {
    for (name, text) in fixtures() {
        let first = ptx_parser::parse_module(&text)
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let printed = ptx_parser::print_module(&first);
        let second = ptx_parser::parse_module(&printed)
            .unwrap_or_else(|e| panic!("{name} printed does not parse: {e}\n{printed}"));
        assert_eq!(first, second, "{name}");
    }
}

fn assert_same_text(name: &str, printed: &str, text: &str) {
    if printed != text {
        let line = printed
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| printed.lines().count().min(text.lines().count()));
        panic!(
            "{name} differs at line {}:\n printed: {:?}\n input:   {:?}",
            line + 1,
            printed.lines().nth(line),
            text.lines().nth(line)
        );
    }
}

#[test]
fn every_fixture_prints_back_byte_for_byte() {
    for (name, text) in fixtures() {
        let module = ptx_parser::parse_module(&text).expect("parses");
        assert_same_text(&name, &ptx_parser::print_module(&module), &text);
    }
}

#[test]
fn every_fixture_round_trips_through_the_canonical_layout() {
    for (name, text) in fixtures() {
        let mut module = ptx_parser::parse_module(&text).expect("parses");
        module.clear_verbatim();
        let printed = ptx_parser::print_module(&module);
        let again = ptx_parser::parse_module(&printed).unwrap_or_else(|e| {
            panic!("{name} printed canonically does not parse: {e}\n{printed}")
        });
        assert_eq!(module, again, "{name}");
    }
}

#[test]
fn emitter_style_fixtures_print_back_byte_for_byte_in_the_canonical_layout() {
    for (name, text) in fixtures() {
        if !name.starts_with("emitter_") {
            continue;
        }
        let mut module = ptx_parser::parse_module(&text).expect("parses");
        module.clear_verbatim();
        assert_same_text(&name, &ptx_parser::print_module(&module), &text);
    }
}
