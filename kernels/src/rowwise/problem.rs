//! Host-side checks and launch planning of the row-wise ops.

use crate::rowwise::rows::{held_chunks_of, plan_rows, plan_rows_within, Group, RowLaunch};
use crate::rowwise::Access;
use crate::{check_len, Error, FloatType};

/// A validated `rows × cols` problem and how to launch it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowProblem {
    pub rows: u32,
    pub cols: u32,
    pub access: Access,
    pub launch: RowLaunch,
}

impl RowProblem {
    /// Checks the sizes (columns ≥ 1, element count within u32) and picks vector access when
    /// every row starts 16-byte aligned. `max_ctas` caps the grid and forces CTA-per-row;
    /// `held_elems` is what the kernel keeps in registers per thread.
    pub(crate) fn new(
        op: &'static str,
        storage: FloatType,
        rows: usize,
        cols: usize,
        max_ctas: Option<u32>,
        held_elems: u32,
    ) -> Result<RowProblem, Error> {
        RowProblem::planned(op, storage, rows, cols, max_ctas, |access| {
            held_chunks_of(storage, access, held_elems)
        })
    }

    /// [`RowProblem::new`] for a kernel whose threads hold `held(storage, access)` chunks of
    /// their row (the plan must agree with the kernel's count; [`row_held_chunks`] for most).
    ///
    /// [`row_held_chunks`]: super::rows::row_held_chunks
    pub(crate) fn holding(
        op: &'static str,
        storage: FloatType,
        rows: usize,
        cols: usize,
        max_ctas: Option<u32>,
        held: fn(FloatType, Access) -> u32,
    ) -> Result<RowProblem, Error> {
        RowProblem::planned(op, storage, rows, cols, max_ctas, |access| {
            held(storage, access)
        })
    }

    fn planned(
        op: &'static str,
        storage: FloatType,
        rows: usize,
        cols: usize,
        max_ctas: Option<u32>,
        held: impl Fn(Access) -> u32,
    ) -> Result<RowProblem, Error> {
        let access = validate(op, storage, rows, cols)?;
        let nchunks = (cols / access.width(storage) as usize) as u32;
        let launch = plan_rows(rows as u32, nchunks, held(access), max_ctas);
        Ok(RowProblem {
            rows: rows as u32,
            cols: cols as u32,
            access,
            launch,
        })
    }

    /// The same problem planned for a kernel whose CTA-per-row form takes up to
    /// `max_threads` threads.
    pub(crate) fn with_row_threads(
        self,
        storage: FloatType,
        held_elems: u32,
        max_threads: u32,
    ) -> RowProblem {
        let nchunks = self.cols / self.access.width(storage);
        let held = held_chunks_of(storage, self.access, held_elems);
        RowProblem {
            launch: plan_rows_within(self.rows, nchunks, held, None, max_threads),
            ..self
        }
    }

    /// Checks that a buffer holds one element per matrix entry.
    pub(crate) fn check_matrix(
        &self,
        op: &'static str,
        name: &'static str,
        len: usize,
    ) -> Result<(), Error> {
        check_matrix(op, name, len, self.rows, self.cols)
    }

    /// Checks that a buffer holds one element per column.
    pub(crate) fn check_row(
        &self,
        op: &'static str,
        name: &'static str,
        len: usize,
    ) -> Result<(), Error> {
        let c = self.cols;
        check_len(op, name, len, c as usize, || {
            format!("one per column, cols = {c}")
        })
    }

    /// Checks that a buffer holds one element per row.
    pub(crate) fn check_per_row(
        &self,
        op: &'static str,
        name: &'static str,
        len: usize,
    ) -> Result<(), Error> {
        let r = self.rows;
        check_len(op, name, len, r as usize, || {
            format!("one per row, rows = {r}")
        })
    }

    pub(crate) fn group(&self) -> Group {
        self.launch.group
    }

    /// The `#[kernel]` instance that runs this problem: the access width `W` (one element, or
    /// 16 bytes) and `CTA` (1 where a block owns each row).
    pub(crate) fn instance(&self, storage: FloatType) -> (u32, u32) {
        (
            self.access.width(storage),
            (self.group() == Group::Block) as u32,
        )
    }

    /// Whether each row's group holds all of it in registers, `held_elems` a thread.
    pub(crate) fn holds_rows(&self, storage: FloatType, held_elems: u32) -> bool {
        let nchunks = self.cols / self.access.width(storage);
        let threads = match self.group() {
            Group::Warp => 32,
            Group::Block => self.launch.cfg.block[0],
        };
        nchunks as u64 <= threads as u64 * held_chunks_of(storage, self.access, held_elems) as u64
    }
}

/// Checks a `rows × cols` problem's sizes (at least one column; the element count fits u32)
/// and picks its access: 16-byte vectors where every row starts 16-byte aligned (`cols` a
/// multiple of the vector), else one element at a time.
pub(crate) fn validate(
    op: &'static str,
    storage: FloatType,
    rows: usize,
    cols: usize,
) -> Result<Access, Error> {
    if cols == 0 {
        return Err(Error::Unsupported {
            op,
            detail: "cols is 0; a row needs at least one element".into(),
        });
    }
    if rows.checked_mul(cols).is_none_or(|n| n > u32::MAX as usize) {
        return Err(Error::Unsupported {
            op,
            detail: format!(
                "rows × cols = {rows} × {cols} exceeds {} elements; split the batch",
                u32::MAX
            ),
        });
    }
    let width = Access::Vector.width(storage) as usize;
    Ok(if cols.is_multiple_of(width) {
        Access::Vector
    } else {
        Access::Scalar
    })
}

/// Checks that a buffer holds one element per entry of a `rows × cols` matrix.
pub(crate) fn check_matrix(
    op: &'static str,
    name: &'static str,
    len: usize,
    rows: u32,
    cols: u32,
) -> Result<(), Error> {
    check_len(op, name, len, rows as usize * cols as usize, || {
        format!("rows × cols = {rows} × {cols}")
    })
}
