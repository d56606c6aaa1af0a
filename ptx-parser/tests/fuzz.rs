//! The parser on arbitrary text and on mutated valid PTX (the fixtures and the library's PTX
//! goldens), driven by a seeded generator with a fixed case count so it runs in CI: it never
//! panics, whatever parses prints back exactly, and in the canonical layout prints to text that
//! parses to an equal AST, stably. The corpus `fuzz/corpus/ptx-parser/` is replayed first.

#[path = "../../fuzz/support.rs"]
mod support;

use std::path::Path;
use support::{Rng, Runner};

/// Cases a CI run generates (about 20 s in a debug build on two cores).
const CI_CASES: usize = 6000;

/// Goldens larger than this are left out as seeds: parsing them in a debug build costs more
/// than the variety they add.
const MAX_SEED_BYTES: usize = 24_000;

fn check(text: &str) -> Result<(), String> {
    let Ok(module) = ptx_parser::parse_module(text) else {
        return Ok(());
    };
    if ptx_parser::print_module(&module) != text {
        return Err("a module that parsed did not print back exactly".into());
    }
    let mut canonical = module.clone();
    canonical.clear_verbatim();
    let printed = ptx_parser::print_module(&canonical);
    let mut again = ptx_parser::parse_module(&printed)
        .map_err(|e| format!("the canonical print does not parse: {e}\n{printed}"))?;
    if again != module {
        return Err(format!("print -> parse changed the AST:\n{printed}"));
    }
    again.clear_verbatim();
    if ptx_parser::print_module(&again) != printed {
        return Err("the canonical print is not stable".into());
    }
    Ok(())
}

/// The hand-written PTX fixtures.
fn fixture_texts() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| std::fs::read_to_string(p).expect("fixture text"))
        .collect()
}

/// The PTX of each golden small enough to seed with, without insta's header.
fn golden_seeds() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/snapshots");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "snap"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| t.len() <= MAX_SEED_BYTES)
        .filter_map(|t| {
            // `---\nsource: …\nexpression: …\n---\n<ptx>`
            let body = t.strip_prefix("---\n")?;
            let end = body.find("\n---\n")?;
            Some(body[end + 5..].to_string())
        })
        .collect()
}

/// Pieces of PTX spliced into text, so mutants and token soups stay near the grammar.
const VOCAB: &[&str] = &[
    ";",
    ",",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "+",
    "-",
    "!",
    "@",
    "|",
    ":",
    "=",
    " ",
    "\n",
    "\t",
    "//",
    "/*",
    "*/",
    "\"",
    ".",
    ".reg",
    ".b32",
    ".f32",
    ".u64",
    ".pred",
    ".shared",
    ".global",
    ".param",
    ".const",
    ".local",
    ".align",
    ".entry",
    ".func",
    ".visible",
    ".extern",
    ".weak",
    ".v2",
    ".v4",
    ".ptr",
    ".loc",
    ".file",
    ".section",
    ".pragma",
    ".version",
    "8.0",
    ".target",
    "sm_80",
    ".address_size",
    "64",
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    "%r1",
    "%rd2",
    "%f3",
    "%p1",
    "%tid",
    ".x",
    "%laneid",
    "%r<4>",
    "_",
    "0x",
    "0xFFFFFFFFFFFFFFFF",
    "0f",
    "0f3F800000",
    "0d",
    "0d3FF0000000000000",
    "-1",
    "1.5e",
    "1e99999",
    "18446744073709551616",
    "16",
    "mov.u32",
    "add.s32",
    "ld.global.nc.v4.f32",
    "st.shared.f32",
    "setp.lo.and.u32",
    "@!%p1",
    "bra",
    "bra.uni",
    "$L1",
    "$L1:",
    "call.uni",
    "ret",
    "exit",
    "bar.sync",
    "shfl.sync.bfly.b32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "cvt.rn.f32.s32",
    "é",
    "\0",
    "\u{FEFF}",
];

fn boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One random edit of `text`.
fn mutate(rng: &mut Rng, text: &mut String) {
    let at = boundary(text, rng.below(text.len() + 1));
    match rng.below(8) {
        0 => {
            let end = boundary(text, at + 1 + rng.below(40));
            text.replace_range(at..end, "");
        }
        1 | 2 => {
            let piece = *rng.pick(VOCAB);
            text.insert_str(at, piece);
        }
        3 => {
            let end = boundary(text, at + 1 + rng.below(300));
            let copy = text[at..end].to_string();
            text.insert_str(end, &copy);
        }
        4 => text.truncate(at),
        5 => {
            // Replace one character with an arbitrary one.
            let end = boundary(text, at + 1);
            let c = char::from_u32(rng.below(0x250) as u32).unwrap_or('?');
            text.replace_range(at..end.max(at), &c.to_string());
        }
        6 => {
            // Swap two lines: labels before their declarations, uses before `.reg`.
            let mut lines: Vec<&str> = text.split('\n').collect();
            let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
            lines.swap(i, j);
            *text = lines.join("\n");
        }
        _ => {
            // Change a digit, so counts, vector widths and immediates leave their range.
            if let Some(pos) = text[at..].find(|c: char| c.is_ascii_digit()) {
                let p = at + pos;
                let digits = ["0", "9", "99999999999", "4294967296", "-"];
                let digit = *rng.pick(&digits);
                text.replace_range(p..p + 1, digit);
            }
        }
    }
}

/// Text from nothing: a token soup, or raw bytes read as UTF-8.
fn arbitrary_text(rng: &mut Rng) -> String {
    if rng.one_in(3) {
        let bytes: Vec<u8> = (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect();
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let mut text = String::new();
    for _ in 0..rng.below(120) {
        let piece = *rng.pick(VOCAB);
        text.push_str(piece);
        if rng.one_in(2) {
            text.push(' ');
        }
    }
    text
}

#[test]
fn the_parser_never_panics_on_arbitrary_or_mutated_ptx() {
    let mut runner = Runner::new("ptx-parser");
    for (name, text) in support::corpus(env!("CARGO_MANIFEST_DIR"), "ptx-parser") {
        runner.run(format!("corpus {name}"), &text, || check(&text));
    }
    let goldens = golden_seeds();
    assert!(
        goldens.len() > 20,
        "the PTX goldens in tests/snapshots are seeds"
    );
    let seeds: Vec<String> = fixture_texts().into_iter().chain(goldens).collect();
    let seed = support::seed(0x5054_5850_4152);
    let mut rng = Rng::new(seed);
    for case in 0..support::cases(CI_CASES) {
        let text = if rng.one_in(4) {
            arbitrary_text(&mut rng)
        } else {
            let mut text = rng.pick(&seeds).clone();
            for _ in 0..1 + rng.below(5) {
                mutate(&mut rng, &mut text);
            }
            text
        };
        runner.run(format!("seed {seed} case {case}"), &text, || check(&text));
    }
    runner.finish();
}

#[test]
fn fixtures_survive_single_line_deletions() {
    // Deterministic sweep: drop each line of the emitter-style fixtures in turn.
    for text in fixture_texts()
        .iter()
        .filter(|t| t.contains("Generated by ptxkit"))
    {
        let lines: Vec<&str> = text.lines().collect();
        for skip in 0..lines.len() {
            let mutant: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .map(|(_, l)| *l)
                .collect();
            let mutant = mutant.join("\n");
            if let Err(e) = check(&mutant) {
                panic!("without line {skip}: {e}\n{mutant}");
            }
        }
    }
}
