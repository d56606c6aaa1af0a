//! Greedy arg-max over the vocabulary for decode: the index of each row's largest logit, ties
//! going to the lowest index, for f32 and bf16 logits. A few rows fill the GPU: each row is
//! split over several CTAs, which leave their partials in a caller's workspace.

mod plan;
mod search_kernel;

use crate::error::check_workspace;
use crate::op_kernel::kernel_refs;
use crate::rowwise::problem::validate;
use crate::rowwise::Access;
use crate::Float;
use crate::{check_len, Error, OpKernel};
use kernel_runtime::{Buffer, Stream};
use plan::{access_for, Split};

static ARGMAX_SEARCH: [OpKernel; 4] = OpKernel::instances(search_kernel::ARGMAX_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![ARGMAX_SEARCH[0 1 2 3]];

/// u32 words of workspace [`argmax`] needs for a `rows × cols` problem.
///
/// ```
/// // One counter per row and a (value, index) pair for each of a row's CTAs.
/// assert_eq!(kernels::argmax::argmax_workspace(4096, 151936), 4096 * 3);
/// assert!(kernels::argmax::argmax_workspace(1, 151936) > 3);
/// ```
pub fn argmax_workspace(rows: usize, cols: usize) -> usize {
    let (_, f32_chunks) = access_for(crate::FloatType::F32, cols);
    let (_, bf16_chunks) = access_for(crate::FloatType::Bf16, cols);
    // The larger of the two storages' needs, so one workspace serves both.
    let rows32 = rows.min(u32::MAX as usize) as u32;
    Split::new(rows32, f32_chunks)
        .workspace_words(rows32)
        .max(Split::new(rows32, bf16_chunks).workspace_words(rows32))
}

/// Writes to `index[r]` the column of the largest entry of row `r` of the `rows × cols`
/// `logits` (the lowest such column on ties; NaN counts as +∞).
///
/// `workspace` holds at least [`argmax_workspace`] u32s and must be all zeros the first time
/// it is used (`Buffer::zeros`); every call leaves its counters at zero again, so the same
/// workspace serves every later call, graph replays included.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::argmax::{argmax, argmax_workspace};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let logits = Buffer::from_host(&stream, &[0.5f32, 2.0, 2.0, -1.0, 3.0, 0.0])?;
/// let mut index = Buffer::<u32>::zeros(&stream, 2)?;
/// let mut ws = Buffer::<u32>::zeros(&stream, argmax_workspace(2, 3))?;
/// argmax(&stream, &logits, &mut index, &mut ws, 2, 3)?;
/// assert_eq!(index.to_host(&stream)?, vec![1, 1]);
/// # Ok(()) }
/// ```
pub fn argmax<T: Float>(
    stream: &Stream,
    logits: &Buffer<T>,
    index: &mut Buffer<u32>,
    workspace: &mut Buffer<u32>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("argmax")?;
    let Some((access, split)) =
        checked::<T>(logits.len(), index.len(), workspace.len(), rows, cols)?
    else {
        return Ok(());
    };
    let width = access.width(T::TYPE);
    search_kernel::argmax(
        stream,
        split.launch(rows as u32),
        width,
        logits,
        index,
        workspace,
        rows as u32,
        cols as u32,
        split.splits,
        split.seg,
    )?;
    Ok(())
}

/// Checks the sizes and buffer lengths; the access and split that run the problem, or `None`
/// for no rows.
fn checked<T: Float>(
    logits: usize,
    index: usize,
    workspace: usize,
    rows: usize,
    cols: usize,
) -> Result<Option<(Access, Split)>, Error> {
    const OP: &str = "argmax";
    validate(OP, T::TYPE, rows, cols)?;
    check_len(OP, "logits", logits, rows * cols, || {
        format!("rows × cols = {rows} × {cols}")
    })?;
    check_len(OP, "index", index, rows, || {
        format!("one per row, rows = {rows}")
    })?;
    let (access, nchunks) = access_for(T::TYPE, cols);
    let split = Split::new(rows as u32, nchunks);
    check_workspace(OP, workspace, argmax_workspace(rows, cols))?;
    if rows == 0 {
        return Ok(None);
    }
    Ok(Some((access, split)))
}

/// The CPU reference: the first index of each row's maximum (NaN counts as +∞).
///
/// ```
/// assert_eq!(kernels::argmax::reference(&[1.0, f32::NAN, 3.0], 1, 3), vec![1]);
/// ```
pub fn reference(logits: &[f32], rows: usize, cols: usize) -> Vec<u32> {
    (0..rows)
        .map(|r| {
            let row = &logits[r * cols..(r + 1) * cols];
            let key = |v: f32| if v.is_nan() { f32::INFINITY } else { v };
            let mut best = 0;
            for (j, &v) in row.iter().enumerate() {
                if key(v) > key(row[best]) {
                    best = j;
                }
            }
            best as u32
        })
        .collect()
}
