//! Host-side checks and launch planning of the row-wise ops.

use super::problem::{check_matrix, validate};
use super::rows::{held_chunks, plan_rows, Group, RowLaunch, MAX_ROW_THREADS};
use super::Access;
use crate::{check_len, Error, FloatType};

/// Element type × memory access × row group: which instance runs a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowSpec {
    pub storage: FloatType,
    pub access: Access,
    pub group: Group,
}

/// Chunks of its row each thread of a row kernel planned by [`RowPlan::new`] holds in
/// registers: four 16-byte vectors (16 f32 or 32 bf16, so a bf16 row keeps as many bytes in
/// flight per thread as an f32 one), or the shared default for scalar access.
pub(crate) const fn row_held_chunks(storage: FloatType, access: Access) -> u32 {
    match access {
        Access::Vector => 4,
        Access::Scalar => held_chunks(storage, access),
    }
}

/// A validated `rows × cols` problem, the specialization that runs it, and its launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowPlan {
    pub rows: u32,
    pub cols: u32,
    pub spec: RowSpec,
    pub launch: RowLaunch,
}

impl RowPlan {
    /// Checks the sizes (at least one column; the element count fits u32) and picks 16-byte
    /// vector access when every row starts 16-byte aligned (`cols` a multiple of the vector).
    /// `max_ctas` caps the grid and forces CTA-per-row.
    pub(crate) fn new(
        op: &'static str,
        storage: FloatType,
        rows: usize,
        cols: usize,
        max_ctas: Option<u32>,
    ) -> Result<RowPlan, Error> {
        RowPlan::holding(op, storage, rows, cols, max_ctas, row_held_chunks)
    }

    /// [`RowPlan::new`] for a kernel whose threads hold `held(storage, access)` chunks of their
    /// row (the plan must agree with the kernel's count).
    pub(crate) fn holding(
        op: &'static str,
        storage: FloatType,
        rows: usize,
        cols: usize,
        max_ctas: Option<u32>,
        held: fn(FloatType, Access) -> u32,
    ) -> Result<RowPlan, Error> {
        let access = validate(op, storage, rows, cols)?;
        let nchunks = (cols / access.width(storage) as usize) as u32;
        let held = held(storage, access);
        let mut launch = plan_rows(rows as u32, nchunks, held, max_ctas);
        // Rows wider than this many threads hold are read again; the kernels loop over them.
        launch.cfg.block[0] = launch.cfg.block[0].min(MAX_ROW_THREADS);
        Ok(RowPlan {
            rows: rows as u32,
            cols: cols as u32,
            spec: RowSpec {
                storage,
                access,
                group: launch.group,
            },
            launch,
        })
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
}
