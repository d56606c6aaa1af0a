//! Token embeddings: the gather (forward) and its deterministic backward, for f32 and bf16
//! storage. The backward uses no atomics: each warp owns a slice of the vocabulary rows and
//! adds the gradients of its tokens in token order, so every run gives the same bits.

mod gather_kernel;
pub mod reference;
mod scatter_kernel;

use crate::cast::Element;
use crate::codegen::kernel_table;
use crate::codegen::rows::Group;
use crate::codegen::tensor::Access;
use crate::rowwise::shape::RowPlan;
use crate::rowwise::spec::RowSpec;
use crate::{check_len, Error, OpKernel, Storage};
use kernel_runtime::{Buffer, KernelArg, LaunchConfig, Stream};
use scatter_kernel::{ROWS_PER_WARP, SCATTER_THREADS};

/// The backward's specializations (storage × access; a warp owns its rows either way).
const SCATTER_SPECS: [RowSpec; 4] = [
    RowSpec {
        storage: Storage::F32,
        access: Access::Scalar,
        group: Group::Warp,
    },
    RowSpec {
        storage: Storage::F32,
        access: Access::Vector,
        group: Group::Warp,
    },
    RowSpec {
        storage: Storage::Bf16,
        access: Access::Scalar,
        group: Group::Warp,
    },
    RowSpec {
        storage: Storage::Bf16,
        access: Access::Vector,
        group: Group::Warp,
    },
];

kernel_table!(static GATHER = gather_kernel::gather, RowSpec::ALL, [0 1 2 3 4 5 6 7]);
kernel_table!(static SCATTER = scatter_kernel::scatter, SCATTER_SPECS, [0 1 2 3]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[
    &GATHER[0],
    &GATHER[1],
    &GATHER[2],
    &GATHER[3],
    &GATHER[4],
    &GATHER[5],
    &GATHER[6],
    &GATHER[7],
    &SCATTER[0],
    &SCATTER[1],
    &SCATTER[2],
    &SCATTER[3],
];

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
pub fn embedding<T: Element>(
    stream: &Stream,
    table: &Buffer<T>,
    ids: &Buffer<u32>,
    out: &mut Buffer<T>,
    tokens: usize,
    vocab: usize,
    hidden: usize,
) -> Result<(), Error> {
    const OP: &str = "embedding";
    let table_plan = RowPlan::new(OP, T::STORAGE, vocab, hidden, None)?;
    table_plan.check_matrix(OP, "table", table.len())?;
    let p = RowPlan::new(OP, T::STORAGE, tokens, hidden, None)?;
    p.check_matrix(OP, "out", out.len())?;
    p.check_per_row(OP, "ids", ids.len())?;
    if tokens == 0 {
        return Ok(());
    }
    let args = [
        KernelArg::from(table),
        KernelArg::from(ids),
        KernelArg::from(&mut *out),
        KernelArg::from(p.rows),
        KernelArg::from(p.cols),
        KernelArg::from(table_plan.rows),
    ];
    stream.launch(GATHER[p.spec.index()].artifacts(), p.launch.cfg, &args)?;
    Ok(())
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
pub fn embedding_backward<T: Element>(
    stream: &Stream,
    dout: &Buffer<T>,
    ids: &Buffer<u32>,
    dtable: &mut Buffer<T>,
    tokens: usize,
    vocab: usize,
    hidden: usize,
) -> Result<(), Error> {
    const OP: &str = "embedding_backward";
    let table_plan = RowPlan::new(OP, T::STORAGE, vocab, hidden, None)?;
    table_plan.check_matrix(OP, "dtable", dtable.len())?;
    let p = RowPlan::new(OP, T::STORAGE, tokens, hidden, None)?;
    p.check_matrix(OP, "dout", dout.len())?;
    check_len(OP, "ids", ids.len(), tokens, || {
        format!("one per token, tokens = {tokens}")
    })?;
    if vocab == 0 {
        return Ok(());
    }
    let spec_index = match (T::STORAGE, p.spec.access) {
        (Storage::F32, Access::Scalar) => 0,
        (Storage::F32, Access::Vector) => 1,
        (Storage::Bf16, Access::Scalar) => 2,
        (Storage::Bf16, Access::Vector) => 3,
    };
    let rows_per_cta = ROWS_PER_WARP * (SCATTER_THREADS / 32);
    let cfg = LaunchConfig::linear((vocab as u32).div_ceil(rows_per_cta), SCATTER_THREADS);
    let args = [
        KernelArg::from(dout),
        KernelArg::from(ids),
        KernelArg::from(&mut *dtable),
        KernelArg::from(tokens as u32),
        KernelArg::from(p.cols),
        KernelArg::from(vocab as u32),
    ];
    stream.launch(SCATTER[spec_index].artifacts(), cfg, &args)?;
    Ok(())
}
