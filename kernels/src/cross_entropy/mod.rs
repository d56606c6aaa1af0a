//! Softmax cross-entropy over a vocabulary, fused: one launch reads each row of logits for its
//! online (max, sum) and writes the gradient, with an ignore index and the mean over the rows
//! that are not ignored. A single-CTA kernel counts the rows before, another averages the
//! per-row losses after, each in a fixed order.
//!
//! Two passes cover a row ([`RowPass`]): the streamed one gives each row one block (or warp)
//! and reads again what its registers cannot hold; the split one gives a wide row several
//! blocks that hold it all and exchange their partials, so the row is read once.

mod loss_kernel;
mod reference;
mod split;
mod split_kernel;

pub use reference::{reference, Reference};

use crate::error::check_workspace;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::HELD_ELEMS;
use crate::rowwise::Access;
use crate::Float;
use crate::{check_len, Error, FloatType, OpKernel};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

/// Threads of the single block of the counting and averaging kernels (their `block = 256`).
const TALLY_THREADS: u32 = 256;

/// The most threads a row's block takes: 1024 for f32 in 16-byte chunks (within 64
/// registers), so that one block fills an SM and each SM streams one row; 512 for bf16 in
/// 16-byte chunks, held to 56 registers so that two blocks fit an SM; otherwise 512 (within 128
/// registers; `tests/instance_registers.rs` checks them).
fn row_threads(storage: FloatType, access: Access) -> u32 {
    match (storage, access) {
        (FloatType::F32, Access::Vector) => 1024,
        _ => 512,
    }
}

static CROSS_ENTROPY: [OpKernel; 8] = OpKernel::instances(loss_kernel::CROSS_ENTROPY_INSTANCES);
static CROSS_ENTROPY_SPLIT: [OpKernel; 2] =
    OpKernel::instances(split_kernel::CROSS_ENTROPY_SPLIT_INSTANCES);
static CROSS_ENTROPY_COUNT: OpKernel = OpKernel::language(&loss_kernel::CROSS_ENTROPY_COUNT);
static CROSS_ENTROPY_MEAN: OpKernel = OpKernel::language(&loss_kernel::CROSS_ENTROPY_MEAN);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[
    &CROSS_ENTROPY[0],
    &CROSS_ENTROPY[1],
    &CROSS_ENTROPY[2],
    &CROSS_ENTROPY[3],
    &CROSS_ENTROPY[4],
    &CROSS_ENTROPY[5],
    &CROSS_ENTROPY[6],
    &CROSS_ENTROPY[7],
    &CROSS_ENTROPY_SPLIT[0],
    &CROSS_ENTROPY_SPLIT[1],
    &CROSS_ENTROPY_COUNT,
    &CROSS_ENTROPY_MEAN,
];

/// Whether the automatic choice splits a row of `cols` elements of `storage` (where the split
/// pass can take it). Measured on the H200 against the streamed pass (BENCHMARKS.md,
/// "Cross-entropy with the row split over blocks"): f32 ahead by 5 to 24 points from 4096
/// columns to 151936; bf16 ahead at 8192 and 16384 (one and two blocks a row) and behind from
/// 32000 up, where its streamed pass is ahead, and at 4096, where half a block idles.
fn split_by_default(storage: FloatType, cols: usize) -> bool {
    match storage {
        FloatType::F32 => cols >= 4096,
        _ => (8192..=16384).contains(&cols),
    }
}

/// How the fused pass covers a row of logits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowPass {
    /// Split where the row is read in 16-byte chunks and is f32 at least 4096 wide, or bf16
    /// from 8192 to 16384 wide (where each measured faster); streamed otherwise. What
    /// [`cross_entropy`] does.
    #[default]
    Auto,
    /// A block (or a warp, for narrow rows) per row, holding what its registers can and
    /// reading the rest a second time for the gradient.
    Streamed,
    /// Up to 32 blocks per row, each holding its slice of the row in registers; the row's
    /// blocks exchange (max, sum) through the workspace, so the row is read once. Rows read
    /// in 16-byte chunks (a width that is a multiple of 4 for f32, of 8 for bf16) of at most
    /// 262144 elements; anything else is an error.
    Split,
}

/// u32 words of workspace [`cross_entropy`] needs for `rows` rows of `vocab` logits, for
/// either element type. It must be all zeros before its first use; the kernels leave its
/// counters at zero again, so one workspace serves every later call, graph replays included.
/// It serves one call at a time: calls that may run at once (on two streams) need one each.
///
/// ```
/// assert_eq!(kernels::cross_entropy::cross_entropy_workspace(4096, 151936), 1 + 4096 * 39);
/// assert_eq!(kernels::cross_entropy::cross_entropy_workspace(4, 10), 1 + 4 * 3);
/// ```
pub fn cross_entropy_workspace(rows: usize, vocab: usize) -> usize {
    split::Split::of_f32(vocab).map_or(0, |s| s.workspace_words(rows))
}

/// Softmax cross-entropy of `rows × vocab` `logits` against `targets` (one class index per
/// row), loss and gradient in one pass over the logits:
///
/// - `loss[0]` = mean loss over the rows whose target is not `ignore_index`, `loss[1]` = how
///   many such rows there are (NaN loss where every row is ignored, as PyTorch gives);
/// - `row_loss[r]` = row `r`'s loss (0 where ignored);
/// - `dlogits` = `d loss[0] / d logits`: `(softmax(row) − onehot(target)) / loss[1]`, 0 on
///   ignored rows.
///
/// `workspace` holds at least [`cross_entropy_workspace`] u32s, all zeros the first time.
/// A target outside `0..vocab` that is not `ignore_index` gives NaN in its row's loss and
/// gradient (device data cannot be checked before launch).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::cross_entropy::{cross_entropy, cross_entropy_workspace};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let logits = Buffer::from_host(&stream, &[0.0f32, 0.0, 1.0, 2.0])?;
/// let targets = Buffer::from_host(&stream, &[1i32, -100])?;
/// let mut dlogits = Buffer::<f32>::zeros(&stream, 4)?;
/// let mut row_loss = Buffer::<f32>::zeros(&stream, 2)?;
/// let mut loss = Buffer::<f32>::zeros(&stream, 2)?;
/// let mut workspace = Buffer::<u32>::zeros(&stream, cross_entropy_workspace(2, 2))?;
/// cross_entropy(
///     &stream, &logits, &targets, &mut dlogits, &mut row_loss, &mut loss, &mut workspace,
///     2, 2, -100,
/// )?;
/// let loss = loss.to_host(&stream)?;
/// assert!((loss[0] - 2f32.ln()).abs() < 1e-6 && loss[1] == 1.0);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy<T: Float>(
    stream: &Stream,
    logits: &Buffer<T>,
    targets: &Buffer<i32>,
    dlogits: &mut Buffer<T>,
    row_loss: &mut Buffer<f32>,
    loss: &mut Buffer<f32>,
    workspace: &mut Buffer<u32>,
    rows: usize,
    vocab: usize,
    ignore_index: i32,
) -> Result<(), Error> {
    cross_entropy_with(
        stream,
        logits,
        targets,
        dlogits,
        row_loss,
        loss,
        workspace,
        rows,
        vocab,
        ignore_index,
        RowPass::Auto,
    )
}

/// [`cross_entropy`] with the pass chosen by the caller (to compare the two, or to pin one).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::cross_entropy::{cross_entropy_with, cross_entropy_workspace, RowPass};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let (rows, vocab) = (2, 8);
/// let logits = Buffer::from_host(&stream, &[0.5f32; 16])?;
/// let targets = Buffer::from_host(&stream, &[3i32, 5])?;
/// let mut dlogits = Buffer::<f32>::zeros(&stream, rows * vocab)?;
/// let mut row_loss = Buffer::<f32>::zeros(&stream, rows)?;
/// let mut loss = Buffer::<f32>::zeros(&stream, 2)?;
/// let mut workspace = Buffer::<u32>::zeros(&stream, cross_entropy_workspace(rows, vocab))?;
/// cross_entropy_with(
///     &stream, &logits, &targets, &mut dlogits, &mut row_loss, &mut loss, &mut workspace,
///     rows, vocab, -100, RowPass::Split,
/// )?;
/// // Equal logits: every class has probability 1/8.
/// assert!((loss.to_host(&stream)?[0] - 8f32.ln()).abs() < 1e-5);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy_with<T: Float>(
    stream: &Stream,
    logits: &Buffer<T>,
    targets: &Buffer<i32>,
    dlogits: &mut Buffer<T>,
    row_loss: &mut Buffer<f32>,
    loss: &mut Buffer<f32>,
    workspace: &mut Buffer<u32>,
    rows: usize,
    vocab: usize,
    ignore_index: i32,
    pass: RowPass,
) -> Result<(), Error> {
    const OP: &str = "cross_entropy";
    crate::float::f32_or_bf16::<T>(OP)?;
    let p = RowProblem::new(OP, T::TYPE, rows, vocab, None, HELD_ELEMS)?;
    // A thread holds two 16-byte chunks, or 16 elements one at a time (the kernel's `hold`).
    let held = match p.access {
        Access::Vector => 2 * p.access.width(T::TYPE),
        Access::Scalar => HELD_ELEMS,
    };
    let p = p.with_row_threads(T::TYPE, held, row_threads(T::TYPE, p.access));
    p.check_matrix(OP, "logits", logits.len())?;
    p.check_matrix(OP, "dlogits", dlogits.len())?;
    check_len(OP, "targets", targets.len(), rows, || {
        format!("one per row, rows = {rows}")
    })?;
    check_len(OP, "row_loss", row_loss.len(), rows, || {
        format!("one per row, rows = {rows}")
    })?;
    check_len(OP, "loss", loss.len(), 2, || {
        "the mean loss and the count of rows not ignored".into()
    })?;
    check_workspace(OP, workspace.len(), cross_entropy_workspace(rows, vocab))?;
    let split = (p.access == Access::Vector)
        .then(|| {
            let width = p.access.width(T::TYPE);
            split::Split::of(p.cols / width, width)
        })
        .flatten();
    let split = match pass {
        RowPass::Auto => split.filter(|_| split_by_default(T::TYPE, vocab)),
        RowPass::Streamed => None,
        RowPass::Split => Some(split.ok_or_else(|| Error::Unsupported {
            op: OP,
            detail: format!(
                "the split pass takes rows of 16-byte chunks (a width that is a multiple of 4 \
                 for f32, of 8 for bf16) of at most 262144 elements ({} × {vocab} given); use \
                 RowPass::Streamed or RowPass::Auto",
                T::TYPE.suffix()
            ),
        })?),
    };
    let single = LaunchConfig::linear(1, TALLY_THREADS);
    loss_kernel::cross_entropy_count(stream, single, targets, loss, p.rows, ignore_index)?;
    if rows > 0 {
        if let Some(s) = split {
            let blocks = p.rows * s.slices;
            let cfg = LaunchConfig::linear(blocks, split_kernel::SPLIT_THREADS);
            split_kernel::cross_entropy_split(
                stream,
                cfg,
                p.access.width(T::TYPE),
                logits,
                targets,
                loss,
                dlogits,
                row_loss,
                workspace,
                p.rows,
                p.cols,
                ignore_index,
                s.slices,
                s.per,
            )?;
        } else {
            let (w, cta) = p.instance(T::TYPE);
            loss_kernel::cross_entropy(
                stream,
                p.launch.cfg,
                w,
                cta,
                logits,
                targets,
                loss,
                dlogits,
                row_loss,
                p.rows,
                p.cols,
                ignore_index,
            )?;
        }
    }
    loss_kernel::cross_entropy_mean(stream, single, row_loss, loss, p.rows)?;
    Ok(())
}
