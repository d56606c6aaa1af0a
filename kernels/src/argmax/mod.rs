//! Greedy arg-max over the vocabulary for decode: the index of each row's largest logit, ties
//! going to the lowest index, for f32 and bf16 logits.

mod kernel;

use crate::cast::Element;
use crate::codegen::{kernel_refs, kernel_table};
use crate::rowwise::shape::RowPlan;
use crate::rowwise::spec::RowSpec;
use crate::{Error, OpKernel};
use kernel_runtime::{Buffer, KernelArg, Stream};

kernel_table!(static ARGMAX = kernel::argmax, RowSpec::ALL, [0 1 2 3 4 5 6 7]);

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = kernel_refs![ARGMAX[0 1 2 3 4 5 6 7]];

/// Writes to `index[r]` the column of the largest entry of row `r` of the `rows × cols`
/// `logits` (the lowest such column on ties; NaN counts as +∞).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let logits = Buffer::from_host(&stream, &[0.5f32, 2.0, 2.0, -1.0, 3.0, 0.0])?;
/// let mut index = Buffer::<u32>::zeros(&stream, 2)?;
/// kernels::argmax::argmax(&stream, &logits, &mut index, 2, 3)?;
/// assert_eq!(index.to_host(&stream)?, vec![1, 1]);
/// # Ok(()) }
/// ```
pub fn argmax<T: Element>(
    stream: &Stream,
    logits: &Buffer<T>,
    index: &mut Buffer<u32>,
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    const OP: &str = "argmax";
    let p = RowPlan::new(OP, T::STORAGE, rows, cols, None)?;
    p.check_matrix(OP, "logits", logits.len())?;
    p.check_per_row(OP, "index", index.len())?;
    if rows == 0 {
        return Ok(());
    }
    let args = [
        KernelArg::from(logits),
        KernelArg::from(&mut *index),
        KernelArg::from(p.rows),
        KernelArg::from(p.cols),
    ];
    stream.launch(ARGMAX[p.spec.index()].artifacts(), p.launch.cfg, &args)?;
    Ok(())
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
