//! The source location of the tokens an instruction is lowered from: the file relative to the
//! root of the crate that holds it (so PTX is byte-identical in every clone), the 1-based line
//! and column, and the expression's text where the source file can be read.

use crate::diag::SpanRange;
use kernel_dsl::source_map::{SourceLoc, SourceMap};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A source file seen in this compilation: its crate-relative name and its lines.
struct SourceFile {
    name: String,
    lines: Vec<String>,
}

/// Source files seen so far, by the path rustc gave for them (every instruction asks, so the
/// name and the lines are worked out once per file).
static FILES: Mutex<Option<HashMap<PathBuf, SourceFile>>> = Mutex::new(None);

/// Where `span` starts, interned into `map`; `None` where the span has no location (tokens
/// the macro made itself).
pub fn locate(map: &mut SourceMap, span: SpanRange, inlined: Option<u32>) -> Option<SourceLoc> {
    let start = span.start.start();
    if start.line == 0 {
        return None;
    }
    let path = span.start.local_file()?;
    let end = span.end.end();
    let mut cache = FILES.lock().unwrap_or_else(|p| p.into_inner());
    let files = cache.get_or_insert_with(HashMap::new);
    if !files.contains_key(&path) {
        let file = absolute(&path)?;
        let lines = std::fs::read_to_string(&file).unwrap_or_default();
        let info = SourceFile {
            name: crate_relative(&file),
            lines: lines.lines().map(str::to_string).collect(),
        };
        files.insert(path.clone(), info);
    }
    let file = files.get(&path)?;
    let text = same_file(&span)
        .then(|| {
            excerpt(
                &file.lines,
                (start.line, start.column),
                (end.line, end.column),
            )
        })
        .flatten();
    Some(SourceLoc {
        file: map.file(&file.name),
        line: start.line as u32,
        col: start.column as u32 + 1,
        inlined,
        text: text.map(|t| map.text(&t)),
    })
}

fn same_file(span: &SpanRange) -> bool {
    span.start.local_file() == span.end.local_file()
}

fn absolute(path: &Path) -> Option<PathBuf> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    Some(joined.canonicalize().unwrap_or(joined))
}

/// `file` relative to the crate that holds it: the nearest directory above it with a
/// `Cargo.toml`. A file of the crate being expanded reads `src/kernels.rs`; one of another
/// crate (a helper fetched from a dependency) is prefixed with that crate's folder name.
pub fn crate_relative(file: &Path) -> String {
    let own = std::env::var_os("CARGO_MANIFEST_DIR").and_then(|d| absolute(Path::new(&d)));
    let root = file
        .ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.toml").is_file());
    let relative = |root: &Path| file.strip_prefix(root).ok().map(slashes);
    match root {
        Some(r) if Some(r) == own.as_deref() => relative(r),
        Some(r) => relative(r).map(|rel| {
            let name = r.file_name().map(|n| n.to_string_lossy().into_owned());
            format!("{}/{rel}", name.unwrap_or_default())
        }),
        None => None,
    }
    .unwrap_or_else(|| {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        name.unwrap_or_default()
    })
}

fn slashes(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The text from `start` to `end` (1-based lines, 0-based character columns), or to the end of
/// the first line where it spans several.
fn excerpt(lines: &[String], start: (usize, usize), end: (usize, usize)) -> Option<String> {
    let line = lines.get(start.0.checked_sub(1)?)?;
    let chars: Vec<char> = line.chars().collect();
    let stop = if end.0 == start.0 {
        end.1.min(chars.len())
    } else {
        chars.len()
    };
    let text: String = chars.get(start.1..stop)?.iter().collect();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_this_crate_is_named_from_its_root() {
        let root = absolute(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let file = root.join("src").join("lower").join("location.rs");
        assert_eq!(crate_relative(&file), "src/lower/location.rs");
    }

    #[test]
    fn the_same_source_in_two_clones_gets_the_same_name() {
        // Two copies of one crate at different paths: names do not depend on where it lies.
        let base = std::env::temp_dir().join(format!("ptxkit-location-{}", std::process::id()));
        let names: Vec<String> = ["clone-a/x", "clone-b/deeper/y"]
            .iter()
            .map(|dir| {
                let root = base.join(dir).join("helpers");
                std::fs::create_dir_all(root.join("src")).unwrap();
                std::fs::write(root.join("Cargo.toml"), "[package]\n").unwrap();
                let file = root.join("src").join("kernels.rs");
                std::fs::write(&file, "").unwrap();
                crate_relative(&file.canonicalize().unwrap())
            })
            .collect();
        let _ = std::fs::remove_dir_all(&base);
        assert_eq!(names[0], "helpers/src/kernels.rs");
        assert_eq!(names[0], names[1]);
    }
}
