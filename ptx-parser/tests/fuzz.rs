//! Random and mutated input never makes the parser panic; whatever parses prints back exactly,
//! and in the canonical layout prints to text that parses to an equal AST, stably.

use proptest::prelude::*;
use std::path::Path;

fn check(text: &str) {
    if let Ok(module) = ptx_parser::parse_module(text) {
        // Whatever parses prints back exactly.
        assert_eq!(ptx_parser::print_module(&module), text);
        // The canonical layout parses to an equal AST and prints stably.
        let mut canonical = module.clone();
        canonical.clear_verbatim();
        let printed = ptx_parser::print_module(&canonical);
        let mut again = ptx_parser::parse_module(&printed)
            .unwrap_or_else(|e| panic!("printed module does not parse: {e}\n{printed}"));
        assert_eq!(module, again, "print -> parse changed the AST:\n{printed}");
        again.clear_verbatim();
        assert_eq!(ptx_parser::print_module(&again), printed);
    }
}

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

/// Pieces of PTX that mutations splice in, so mutants stay close to the grammar.
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
    ".pred",
    ".shared",
    ".global",
    ".param",
    ".align",
    ".entry",
    ".func",
    ".visible",
    ".extern",
    ".v4",
    ".ptr",
    ".loc",
    ".file",
    ".section",
    ".pragma",
    "%r1",
    "%p1",
    "%tid",
    ".x",
    "%laneid",
    "_",
    "0x",
    "0f",
    "0f3F800000",
    "0d",
    "-1",
    "1.5e",
    "16",
    "%r<4>",
    "mov.u32",
    "@!%p1",
    "bra",
    "$L1",
    "call.uni",
    "ld.global.nc.v4.f32",
    "setp.lo.and.u32",
    "é",
    "\0",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, piece: usize },
    Duplicate { at: usize, len: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..VOCAB.len()).prop_map(|(at, piece)| Mutation::Insert { at, piece }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn boundary(text: &str, at: usize) -> usize {
    let mut at = at % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &mut String, m: &Mutation) {
    match *m {
        Mutation::Delete { at, len } => {
            let start = boundary(text, at);
            let end = boundary(text, start + len.min(text.len() - start));
            text.replace_range(start..end.max(start), "");
        }
        Mutation::Insert { at, piece } => {
            let at = boundary(text, at);
            text.insert_str(at, VOCAB[piece]);
        }
        Mutation::Duplicate { at, len } => {
            let start = boundary(text, at);
            let end = boundary(text, start + len.min(text.len() - start)).max(start);
            let copy = text[start..end].to_string();
            text.insert_str(end, &copy);
        }
        Mutation::Truncate { at } => {
            let at = boundary(text, at);
            text.truncate(at);
        }
    }
}

proptest! {
    // 512 cases by default; PROPTEST_CASES raises it for a longer soak.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        .. ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        check(&text);
    }

    #[test]
    fn token_soup_never_panics(pieces in prop::collection::vec(0..VOCAB.len(), 0..80)) {
        let text: String = pieces.iter().map(|&i| VOCAB[i]).collect::<Vec<_>>().join(" ");
        check(&text);
    }

    #[test]
    fn mutated_fixtures_never_panic(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let texts = fixture_texts();
        let mut text = texts[which.index(texts.len())].clone();
        for m in &mutations {
            apply(&mut text, m);
        }
        check(&text);
    }
}

#[test]
fn fixtures_survive_single_line_deletions() {
    // Deterministic sweep: drop each line of the emitter-style fixture in turn.
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
            check(&mutant.join("\n"));
        }
    }
}
