//! Where a kernel's instructions came from in its Rust source, and whether PTX carries it.
//!
//! `#[kernel]` records a [`SourceLoc`] on every instruction it lowers; the builder's own
//! kernels record none. A kernel's [`SourceMap`] interns what the locations share (file paths,
//! the calls of `#[device]` helpers they were inlined from, the expression texts), so the IR
//! repeats no string per instruction. Paths are relative to the crate root, so the same source
//! gives the same PTX in every clone.

use serde::{Deserialize, Serialize};

/// A position in a kernel's Rust source: 1-based line and column, as rustc prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceLoc {
    /// Index into [`SourceMap::files`].
    pub file: u32,
    pub line: u32,
    pub col: u32,
    /// Index into [`SourceMap::sites`]: the call of the `#[device]` helper this code was
    /// inlined from, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlined: Option<u32>,
    /// Index into [`SourceMap::texts`]: the source text of the expression, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<u32>,
}

/// The call through which a `#[device]` helper's body was inlined.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InlineSite {
    /// The helper's name, as the debugger and profiler show the inlined frame.
    pub function: String,
    /// Where it was called.
    pub call: SourceLoc,
}

/// The strings a kernel's [`SourceLoc`]s point into.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceMap {
    /// Source files, relative to the root of the crate that holds the kernel.
    pub files: Vec<String>,
    pub sites: Vec<InlineSite>,
    pub texts: Vec<String>,
}

impl SourceMap {
    /// Whether no location was recorded (a builder-written kernel).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The index of `path`, added if new.
    pub fn file(&mut self, path: &str) -> u32 {
        intern(&mut self.files, |f| f == path, || path.to_string())
    }

    /// The index of `text`, added if new.
    pub fn text(&mut self, text: &str) -> u32 {
        intern(&mut self.texts, |t| t == text, || text.to_string())
    }

    /// The index of a call of `function` at `call`, added if new.
    pub fn site(&mut self, function: &str, call: SourceLoc) -> u32 {
        let is = |s: &InlineSite| s.function == function && s.call == call;
        intern(&mut self.sites, is, || InlineSite {
            function: function.to_string(),
            call,
        })
    }

    /// `file:line:col` of `loc`, as a person reads it.
    ///
    /// ```
    /// use kernel_dsl::source_map::{SourceLoc, SourceMap};
    /// let mut map = SourceMap::default();
    /// let file = map.file("src/kernels.rs");
    /// let loc = SourceLoc { file, line: 14, col: 9, inlined: None, text: None };
    /// assert_eq!(map.describe(loc), "src/kernels.rs:14:9");
    /// ```
    pub fn describe(&self, loc: SourceLoc) -> String {
        let file = self
            .files
            .get(loc.file as usize)
            .map_or("<unknown file>", String::as_str);
        format!("{file}:{}:{}", loc.line, loc.col)
    }
}

fn intern<T>(list: &mut Vec<T>, is: impl Fn(&T) -> bool, make: impl FnOnce() -> T) -> u32 {
    if let Some(i) = list.iter().position(is) {
        return i as u32;
    }
    list.push(make());
    (list.len() - 1) as u32
}

/// Whether emitted PTX carries `.file`/`.loc` directives for the kernel's source lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LineInfo {
    /// No directives: the PTX the goldens pin.
    #[default]
    Off,
    /// `.file` and `.loc` for every recorded location (`inlined_at` where the ISA has it).
    On,
}

/// Whether `ptx` carries line directives, so that ptxas is asked for `-lineinfo` and the
/// driver for `CU_JIT_GENERATE_LINE_INFO`.
///
/// ```
/// assert!(kernel_dsl::source_map::has_line_info("\t.file\t1 \"src/k.rs\"\n"));
/// assert!(!kernel_dsl::source_map::has_line_info(".version 7.8\n"));
/// ```
pub fn has_line_info(ptx: &str) -> bool {
    ptx.lines().any(|l| l.trim_start().starts_with(".file"))
}
