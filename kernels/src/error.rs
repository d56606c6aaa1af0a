//! The one error type of the op library.

/// What went wrong before (or while) launching an op.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A buffer's length does not fit the problem size.
    #[error("{op}: `{buffer}` holds {actual} elements but {expected} are needed ({why}); pass a buffer of {expected} elements")]
    Length {
        op: &'static str,
        buffer: &'static str,
        expected: usize,
        actual: usize,
        why: String,
    },
    /// A size or option the op does not support.
    #[error("{op}: {detail}")]
    Unsupported { op: &'static str, detail: String },
    #[error(transparent)]
    Runtime(#[from] kernel_runtime::Error),
    #[error(transparent)]
    Dsl(#[from] kernel_dsl::Error),
}

/// Checks that `buffer` of `op` holds exactly `expected` elements.
///
/// ```
/// use kernels::{check_len, Error};
/// assert!(check_len("rms_norm", "x", 12, 12, || "rows × cols".into()).is_ok());
/// let err = check_len("rms_norm", "x", 11, 12, || "rows × cols = 3 × 4".into()).unwrap_err();
/// assert!(err.to_string().contains("`x` holds 11 elements but 12 are needed"));
/// ```
pub fn check_len(
    op: &'static str,
    buffer: &'static str,
    actual: usize,
    expected: usize,
    why: impl FnOnce() -> String,
) -> Result<(), Error> {
    if actual == expected {
        Ok(())
    } else {
        Err(Error::Length {
            op,
            buffer,
            expected,
            actual,
            why: why(),
        })
    }
}

/// Checks that a workspace holds at least `needed` elements (the size `{op}_workspace(rows,
/// cols)` returns).
pub(crate) fn check_workspace(op: &'static str, len: usize, needed: usize) -> Result<(), Error> {
    if len >= needed {
        return Ok(());
    }
    Err(Error::Length {
        op,
        buffer: "workspace",
        expected: needed,
        actual: len,
        why: format!("at least {needed}, from `{op}_workspace(rows, cols)`"),
    })
}
