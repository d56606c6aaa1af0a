//! The `.file` and `.loc` directives of a module emitted with line info.
//!
//! A module numbers its files from 1 across all its kernels. Code inlined from a `#[device]`
//! helper gets the `.loc … function_name …, inlined_at …` form where the module's ISA has it
//! (7.2 and newer), naming the helper through a string in `.debug_str`; below 7.2 it gets the
//! helper's own line only.

use crate::ir::Kernel;
use crate::source_map::SourceLoc;
use crate::target::IsaVersion;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The first PTX ISA whose `.loc` takes `function_name` and `inlined_at`.
pub const INLINED_AT_ISA: IsaVersion = IsaVersion(7, 2);

/// Expression texts longer than this are cut (with `...`), so a `.loc` comment stays one line.
const TEXT_LIMIT: usize = 80;

/// The line tables of one module.
pub(crate) struct ModuleLines<'a> {
    files: Vec<&'a str>,
    /// Per kernel: its file index → the module's file number.
    file_numbers: Vec<Vec<u32>>,
    /// Helper names that `.debug_str` holds, in label order.
    functions: Vec<&'a str>,
    /// Per kernel: its inline-site index → the `.debug_str` label of the helper's name.
    site_labels: Vec<Vec<u32>>,
    inlined_at: bool,
    kernels: &'a [Kernel],
}

impl<'a> ModuleLines<'a> {
    /// Line tables for `kernels` in a module of ISA `isa`.
    pub(crate) fn new(kernels: &'a [Kernel], isa: IsaVersion) -> ModuleLines<'a> {
        let inlined_at = isa >= INLINED_AT_ISA;
        let mut lines = ModuleLines {
            files: Vec::new(),
            file_numbers: Vec::new(),
            functions: Vec::new(),
            site_labels: Vec::new(),
            inlined_at,
            kernels,
        };
        for k in kernels {
            let numbers = k
                .source
                .files
                .iter()
                .map(|f| 1 + intern(&mut lines.files, f))
                .collect();
            lines.file_numbers.push(numbers);
            let labels = k
                .source
                .sites
                .iter()
                .map(|s| intern(&mut lines.functions, &s.function))
                .collect();
            lines.site_labels.push(labels);
        }
        if !inlined_at {
            lines.functions.clear();
        }
        lines
    }

    /// No line tables: every kernel prints without `.loc`.
    pub(crate) fn none() -> ModuleLines<'static> {
        ModuleLines {
            files: Vec::new(),
            file_numbers: Vec::new(),
            functions: Vec::new(),
            site_labels: Vec::new(),
            inlined_at: false,
            kernels: &[],
        }
    }

    /// `.file` for every file any kernel's locations name.
    pub(crate) fn print_files(&self, out: &mut String) {
        if self.files.is_empty() {
            return;
        }
        out.push('\n');
        for (i, f) in self.files.iter().enumerate() {
            let _ = writeln!(out, ".file\t{} \"{}\"", i + 1, escape(f));
        }
    }

    /// The `.debug_str` section holding the inlined helpers' names.
    pub(crate) fn print_function_names(&self, out: &mut String) {
        if self.functions.is_empty() {
            return;
        }
        out.push_str("\n\t.section\t.debug_str\n\t{\n");
        for (i, name) in self.functions.iter().enumerate() {
            let bytes: Vec<String> = name.bytes().chain([0]).map(|b| b.to_string()).collect();
            let _ = writeln!(out, "{}:\n.b8 {}", label(i as u32), bytes.join(","));
        }
        out.push_str("\t}\n");
    }

    /// What the printer of the `index`-th kernel needs.
    pub(crate) fn for_kernel(&self, index: usize) -> KernelLines<'a> {
        match (self.kernels.get(index), self.file_numbers.get(index)) {
            (Some(kernel), Some(files)) if !files.is_empty() => KernelLines {
                kernel: Some(kernel),
                files: files.clone(),
                site_labels: self.site_labels[index].clone(),
                inlined_at: self.inlined_at,
                printed: BTreeSet::new(),
            },
            _ => KernelLines {
                kernel: None,
                files: Vec::new(),
                site_labels: Vec::new(),
                inlined_at: false,
                printed: BTreeSet::new(),
            },
        }
    }
}

/// The line table of one kernel, as its printer uses it.
pub(crate) struct KernelLines<'a> {
    kernel: Option<&'a Kernel>,
    files: Vec<u32>,
    site_labels: Vec<u32>,
    inlined_at: bool,
    /// The (file, line, column) of every `.loc` printed so far: ptxas takes an `inlined_at`
    /// only to a place an earlier `.loc` named.
    printed: BTreeSet<(u32, u32, u32)>,
}

impl KernelLines<'_> {
    /// Prints the `.loc` for `loc`; false where line info is off or `loc` names no file.
    pub(crate) fn print_loc(&mut self, loc: SourceLoc, out: &mut String) -> bool {
        let Some(kernel) = self.kernel else {
            return false;
        };
        let Some(&file) = self.files.get(loc.file as usize) else {
            return false;
        };
        let site = loc
            .inlined
            .and_then(|s| Some((kernel.source.sites.get(s as usize)?, s)));
        if let (true, Some((site, _))) = (self.inlined_at, site) {
            let call = &site.call;
            let named = self.files.get(call.file as usize).copied();
            if named.is_some_and(|f| !self.printed.contains(&(f, call.line, call.col))) {
                self.print_loc(*call, out);
            }
        }
        self.printed.insert((file, loc.line, loc.col));
        let _ = write!(out, "\t.loc\t{file} {} {}", loc.line, loc.col);
        if let (true, Some((site, s))) = (self.inlined_at, site) {
            if let Some(call_file) = self.files.get(site.call.file as usize) {
                let _ = write!(
                    out,
                    ", function_name {}, inlined_at {call_file} {} {}",
                    label(self.site_labels[s as usize]),
                    site.call.line,
                    site.call.col
                );
            }
        }
        if let Some(text) = loc.text.and_then(|t| kernel.source.texts.get(t as usize)) {
            let _ = write!(out, " // {}", one_line(text));
        }
        out.push('\n');
        true
    }
}

fn label(i: u32) -> String {
    format!("$L__info_string{i}")
}

fn intern<'a>(list: &mut Vec<&'a str>, s: &'a str) -> u32 {
    match list.iter().position(|x| *x == s) {
        Some(i) => i as u32,
        None => {
            list.push(s);
            (list.len() - 1) as u32
        }
    }
}

/// A path as a PTX string literal's contents.
fn escape(path: &str) -> String {
    path.replace('\\', "/").replace('"', "\\\"")
}

/// `text` on one line with runs of whitespace as one space, cut at [`TEXT_LIMIT`] characters.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() <= TEXT_LIMIT {
        return joined;
    }
    let cut: String = joined.chars().take(TEXT_LIMIT - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expression_texts_print_on_one_line_and_are_cut_at_the_limit() {
        assert_eq!(one_line("y[i] =\n    a * x[i]"), "y[i] = a * x[i]");
        let long = "x".repeat(200);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), TEXT_LIMIT);
        assert!(cut.ends_with("..."));
    }

    #[test]
    fn windows_separators_print_as_forward_slashes() {
        assert_eq!(escape("src\\norm\\rms.rs"), "src/norm/rms.rs");
    }
}
