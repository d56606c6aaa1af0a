//! The one error type of ptx-parser.

/// Why PTX text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text does not follow PTX syntax at `line`:`column` (both 1-based, columns count
    /// characters).
    #[error("PTX syntax error at line {line}, column {column}: expected {expected}, found {found}\n  help: {help}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What the parser was looking for.
        expected: String,
        /// What it found instead.
        found: String,
        /// How to fix it.
        help: String,
    },
}

impl Error {
    /// The 1-based line and column the error points at.
    ///
    /// ```
    /// let err = ptx_parser::parse_module(".version 7.8\n.target\n").unwrap_err();
    /// assert_eq!(err.position().0, 3);
    /// ```
    pub fn position(&self) -> (usize, usize) {
        match self {
            Error::Syntax { line, column, .. } => (*line, *column),
        }
    }
}
