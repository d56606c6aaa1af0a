//! Token embeddings: the gather (forward) and its deterministic backward, for f32 and bf16
//! storage. The backward uses no atomics: each warp owns a slice of the vocabulary rows and
//! adds the gradients of its tokens in token order, so every run gives the same bits.

mod lookup_kernel;
pub mod reference;

use crate::op_kernel::kernel_refs;
use crate::rowwise::problem::RowProblem;
use crate::rowwise::rows::{row_held_chunks, Group};
use crate::rowwise::Access;
use crate::Float;
use crate::{check_len, Error, FloatType, OpKernel};
use kernel_runtime::{Buffer, LaunchConfig, Stream};
use lookup_kernel::{held_chunks, ROWS_PER_WARP, SCATTER_THREADS};

static EMBEDDING: [OpKernel; 8] = OpKernel::instances(lookup_kernel::EMBEDDING_INSTANCES);
static EMBEDDING_BACKWARD: [OpKernel; 4] =
    OpKernel::instances(lookup_kernel::EMBEDDING_BACKWARD_INSTANCES);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![
    EMBEDDING[0 1 2 3 4 5 6 7],
    EMBEDDING_BACKWARD[0 1 2 3],
];

/// Chunks of its row a thread of the `#[kernel]` forward holds (64 bytes).
fn gather_held(storage: FloatType, access: Access) -> u32 {
    held_chunks(Access::Vector.width(storage), access.width(storage))
}

/// Gathers rows of the `vocab × hidden` `table`: `out[t] = table[ids[t]]` for each of the
/// `tokens` ids. An id not below `vocab` gives a row of NaN (ids live on the device, so they
/// cannot be checked before launch).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let table = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0])?; // 2 rows of 2
/// let ids = Buffer::from_host(&stream, &[1u32, 1, 0])?;
/// let mut out = Buffer::<f32>::zeros(&stream, 6)?;
/// kernels::embedding::embedding(&stream, &table, &ids, &mut out, 3, 2, 2)?;
/// assert_eq!(out.to_host(&stream)?, vec![3.0, 4.0, 3.0, 4.0, 1.0, 2.0]);
/// # Ok(()) }
/// ```
pub fn embedding<T: Float>(
    stream: &Stream,
    table: &Buffer<T>,
    ids: &Buffer<u32>,
    out: &mut Buffer<T>,
    tokens: usize,
    vocab: usize,
    hidden: usize,
) -> Result<(), Error> {
    const OP: &str = "embedding";
    crate::float::f32_or_bf16::<T>(OP)?;
    let Some(p) = gather_plan::<T>(
        OP,
        [table.len(), ids.len(), out.len()],
        tokens,
        vocab,
        hidden,
        gather_held,
    )?
    else {
        return Ok(());
    };
    let w = p.access.width(T::TYPE);
    let cta = (p.group() == Group::Block) as u32;
    lookup_kernel::embedding::<T>(
        stream,
        p.launch.cfg,
        w,
        cta,
        table,
        ids,
        out,
        p.rows,
        p.cols,
        vocab as u32,
    )?;
    Ok(())
}

/// The forward's checks (`table, ids, out` lengths) and row plan for threads holding
/// `held(storage, access)` chunks; `None` where there are no tokens.
fn gather_plan<T: Float>(
    op: &'static str,
    [table, ids, out]: [usize; 3],
    tokens: usize,
    vocab: usize,
    hidden: usize,
    held: fn(FloatType, Access) -> u32,
) -> Result<Option<RowProblem>, Error> {
    let table_plan = RowProblem::holding(op, T::TYPE, vocab, hidden, None, row_held_chunks)?;
    table_plan.check_matrix(op, "table", table)?;
    let p = RowProblem::holding(op, T::TYPE, tokens, hidden, None, held)?;
    p.check_matrix(op, "out", out)?;
    p.check_per_row(op, "ids", ids)?;
    Ok((tokens > 0).then_some(p))
}

/// The gradient of [`embedding`]: `dtable[v] = Σ dout[t]` over the tokens with `ids[t] = v`,
/// added in token order (for bf16 storage each addition rounds to bf16), 0 for rows no token
/// uses; every row of `dtable` is written. Tokens with ids not below `vocab` contribute nothing.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let dout = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?; // 3 tokens, hidden 1
/// let ids = Buffer::from_host(&stream, &[2u32, 0, 2])?;
/// let mut dtable = Buffer::<f32>::zeros(&stream, 3)?;
/// kernels::embedding::embedding_backward(&stream, &dout, &ids, &mut dtable, 3, 3, 1)?;
/// assert_eq!(dtable.to_host(&stream)?, vec![2.0, 0.0, 4.0]);
/// # Ok(()) }
/// ```
pub fn embedding_backward<T: Float>(
    stream: &Stream,
    dout: &Buffer<T>,
    ids: &Buffer<u32>,
    dtable: &mut Buffer<T>,
    tokens: usize,
    vocab: usize,
    hidden: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("embedding_backward")?;
    let Some((p, cfg)) =
        scatter_plan::<T>([dout.len(), ids.len(), dtable.len()], tokens, vocab, hidden)?
    else {
        return Ok(());
    };
    lookup_kernel::embedding_backward::<T>(
        stream,
        cfg,
        p.access.width(T::TYPE),
        dout,
        ids,
        dtable,
        tokens as u32,
        p.cols,
        vocab as u32,
    )?;
    Ok(())
}

/// The backward's checks (`dout, ids, dtable` lengths) and launch: one warp per
/// [`ROWS_PER_WARP`] vocabulary rows; `None` for an empty vocabulary.
fn scatter_plan<T: Float>(
    [dout, ids, dtable]: [usize; 3],
    tokens: usize,
    vocab: usize,
    hidden: usize,
) -> Result<Option<(RowProblem, LaunchConfig)>, Error> {
    const OP: &str = "embedding_backward";
    let table_plan = RowProblem::holding(OP, T::TYPE, vocab, hidden, None, row_held_chunks)?;
    table_plan.check_matrix(OP, "dtable", dtable)?;
    let p = RowProblem::holding(OP, T::TYPE, tokens, hidden, None, row_held_chunks)?;
    p.check_matrix(OP, "dout", dout)?;
    check_len(OP, "ids", ids, tokens, || {
        format!("one per token, tokens = {tokens}")
    })?;
    if vocab == 0 {
        return Ok(None);
    }
    let rows_per_cta = ROWS_PER_WARP * (SCATTER_THREADS / 32);
    let cfg = LaunchConfig::linear((vocab as u32).div_ceil(rows_per_cta), SCATTER_THREADS);
    Ok(Some((p, cfg)))
}
