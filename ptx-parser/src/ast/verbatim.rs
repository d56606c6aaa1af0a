//! The exact text a node was read from, so unchanged nodes print back byte-for-byte.

use std::fmt;

/// The text a node was parsed from, together with the node as parsed. The printer writes the
/// text back while the node still equals what was parsed, and prints the node itself once it
/// has been changed. It never takes part in equality: two ASTs that differ only in what they
/// were read from compare equal.
///
/// ```
/// let text = ".version 7.8\n.target sm_89\n.address_size 64\n.entry k()\n{\n\tadd.s32   %r1,%r2 , 0x10;\n}\n";
/// let mut m = ptx_parser::parse_module(text).unwrap();
/// // Unchanged: the instruction keeps its spacing.
/// assert_eq!(ptx_parser::print_module(&m), text);
/// // Forgetting the source text prints every node in the canonical layout instead.
/// m.clear_verbatim();
/// assert!(ptx_parser::print_module(&m).contains("add.s32   %r1, %r2, 0x10;"));
/// ```
#[derive(Clone)]
pub struct Verbatim<T>(pub(crate) Option<Box<(T, String)>>);

impl<T> Verbatim<T> {
    /// No source text: the node prints in the canonical layout.
    pub fn none() -> Self {
        Verbatim(None)
    }

    /// Records that `node` was read from `text`.
    pub fn new(node: T, text: String) -> Self {
        Verbatim(Some(Box::new((node, text))))
    }

    /// Whether any source text is kept.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// The source text, whatever the node has become since.
    pub fn text(&self) -> Option<&str> {
        self.0.as_deref().map(|(_, text)| text.as_str())
    }
}

impl<T: PartialEq> Verbatim<T> {
    /// The source text if `current` still equals the node as parsed.
    pub fn text_if_unchanged(&self, current: &T) -> Option<&str> {
        self.0
            .as_deref()
            .filter(|(parsed, _)| parsed == current)
            .map(|(_, text)| text.as_str())
    }
}

impl<T> Default for Verbatim<T> {
    fn default() -> Self {
        Verbatim::none()
    }
}

impl<T> PartialEq for Verbatim<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Verbatim<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text() {
            Some(text) => write!(f, "Verbatim({text:?})"),
            None => f.write_str("Verbatim(None)"),
        }
    }
}
