//! The Rust source lines a module's `.file` and `.loc` directives name, so that an error
//! reports `src/kernels.rs:14:9` beside the PTX instruction. `#[kernel]` writes the
//! expression's text as a comment after its `.loc`, which is shown where present.

use ptx_parser::{ItemKind, Module, Trivia};
use std::collections::BTreeMap;

/// A module's `.file` table: number → path.
#[derive(Default)]
pub(crate) struct Files(BTreeMap<u32, String>);

impl Files {
    /// The files `module` declares.
    pub(crate) fn of(module: &Module) -> Files {
        let mut files = BTreeMap::new();
        for item in &module.items {
            let ItemKind::Directive(d) = &item.kind else {
                continue;
            };
            if d.name != "file" {
                continue;
            }
            let mut parts = d.body.splitn(2, char::is_whitespace);
            let number = parts.next().and_then(|n| n.trim().parse().ok());
            let path = parts.next().and_then(|rest| {
                let rest = rest.trim_start().strip_prefix('"')?;
                Some(rest[..rest.find('"')?].to_string())
            });
            if let (Some(n), Some(p)) = (number, path) {
                files.insert(n, p);
            }
        }
        Files(files)
    }

    /// `file:line:col`, then the expression's text where the `.loc` carried one, for a `.loc`
    /// body such as `1 14 9, function_name …, inlined_at 1 30 5`.
    pub(crate) fn describe(&self, loc_body: &str, next: &Trivia) -> Option<String> {
        let mut place = self.place(loc_body)?;
        if let Some((_, call)) = loc_body.split_once("inlined_at") {
            if let Some(call) = self.place(call) {
                place = format!("{place} (inlined at {call})");
            }
        }
        Some(match comment(next) {
            Some(text) => format!("{place}, `{text}`"),
            None => place,
        })
    }

    /// `file:line:col` of the first three numbers of `body`.
    fn place(&self, body: &str) -> Option<String> {
        let mut numbers = body
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u32>().ok());
        let (file, line, col) = (numbers.next()??, numbers.next()??, numbers.next()??);
        let path = self.0.get(&file)?;
        Some(format!("{path}:{line}:{col}"))
    }
}

/// The `// …` comment that ends the line of a `.loc`: the start of the trivia before the
/// statement after it, up to the line's end.
fn comment(trivia: &Trivia) -> Option<String> {
    let first_line = trivia.as_deref()?.split('\n').next()?;
    let text = first_line.trim_start().strip_prefix("//")?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module() -> Module {
        ptx_parser::parse_module(
            ".version 7.8\n.target sm_89\n.address_size 64\n.file\t1 \"src/kernels.rs\"\n",
        )
        .unwrap()
    }

    #[test]
    fn a_loc_is_described_by_its_file_line_column_and_comment() {
        let files = Files::of(&module());
        let text = Some(" // y[i] = x[i]\n\t".to_string());
        assert_eq!(
            files.describe("1 14 9", &text).as_deref(),
            Some("src/kernels.rs:14:9, `y[i] = x[i]`")
        );
        let inlined = "1 3 5, function_name $L__info_string0, inlined_at 1 14 9";
        assert_eq!(
            files.describe(inlined, &None).as_deref(),
            Some("src/kernels.rs:3:5 (inlined at src/kernels.rs:14:9)")
        );
    }

    #[test]
    fn a_loc_naming_an_undeclared_file_is_not_described() {
        assert_eq!(Files::of(&module()).describe("2 14 9", &None), None);
    }

    #[test]
    fn a_comment_on_a_later_line_is_not_the_locs_text() {
        let files = Files::of(&module());
        let later = Some("\n\t// unrelated\n\t".to_string());
        assert_eq!(
            files.describe("1 14 9", &later).as_deref(),
            Some("src/kernels.rs:14:9")
        );
    }
}
