//! Every fixture under `tests/fixtures/` parses, and printing then re-parsing gives an equal
//! AST; fixtures in the emitter's style (`emitter_*.ptx`) print back byte-for-byte.
//!
//! Fixtures: `nvcc_*` written by nvcc 13 (`nvcc -ptx -arch=sm_90`), `triton_*` by Triton,
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

#[test]
fn emitter_style_fixtures_print_back_byte_for_byte() {
    for (name, text) in fixtures() {
        if !name.starts_with("emitter_") {
            continue;
        }
        let module = ptx_parser::parse_module(&text).expect("parses");
        let printed = ptx_parser::print_module(&module);
        if printed != text {
            let line = printed
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{name} differs at line {}:\n printed: {:?}\n input:   {:?}",
                line + 1,
                printed.lines().nth(line),
                text.lines().nth(line)
            );
        }
    }
}
