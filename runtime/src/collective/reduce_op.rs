//! The reductions a communicator offers.

use cudarc::nccl::sys::ncclRedOp_t;

/// How [`Communicator::all_reduce`](crate::Communicator::all_reduce) and
/// [`Communicator::reduce_scatter`](crate::Communicator::reduce_scatter) combine the ranks'
/// values.
///
/// ```
/// use kernel_runtime::ReduceOp;
/// assert_ne!(ReduceOp::Sum, ReduceOp::Average);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum over ranks.
    Sum,
    /// The sum over ranks divided by the number of ranks.
    Average,
}

impl ReduceOp {
    pub(crate) fn nccl(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Average => ncclRedOp_t::ncclAvg,
        }
    }
}
