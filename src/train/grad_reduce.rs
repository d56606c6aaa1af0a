//! Data parallelism inside the step: after the backward, the flat gradient is averaged over
//! the ranks in buckets (whole tensors, merged up to a bucket size), and the loss with it, so
//! that clipping sees the global norm and AdamW makes the same update on every rank.

use kernel_runtime::{Buffer, Communicator, ReduceOp, Stream};
use kernels::optim::ParamLayout;
use std::ops::Range;

/// Gradients are reduced in buckets of about this many elements (4 MiB of f32): large enough
/// for NCCL's bandwidth, small enough that a later step could overlap them with the backward.
pub const BUCKET_ELEMS: usize = 1 << 20;

/// A communicator and the buckets of the flat gradient it averages each step.
pub(crate) struct GradReducer {
    comm: Communicator,
    buckets: Vec<Range<usize>>,
}

impl GradReducer {
    pub fn new(comm: Communicator, layout: &ParamLayout) -> GradReducer {
        let ranges = (0..layout.tensors()).filter_map(|i| layout.range(i));
        GradReducer {
            comm,
            buckets: buckets(ranges, BUCKET_ELEMS),
        }
    }

    pub fn comm(&self) -> &Communicator {
        &self.comm
    }

    /// Queues the average of `grads` (every bucket) and of the mean loss `loss[0]`.
    pub fn reduce(
        &self,
        stream: &Stream,
        grads: &mut Buffer<f32>,
        loss: &mut Buffer<f32>,
    ) -> Result<(), kernel_runtime::Error> {
        for bucket in &self.buckets {
            self.comm
                .all_reduce_range(stream, grads, bucket.clone(), ReduceOp::Average)?;
        }
        // Every shard has the same number of rows, so the mean of the means is the mean.
        self.comm
            .all_reduce_range(stream, loss, 0..1, ReduceOp::Average)
    }
}

/// Contiguous tensor ranges merged into buckets of at most `limit` elements (a tensor larger
/// than `limit` is a bucket of its own). Gaps between tensors (alignment padding) are covered
/// too, so one bucket is one contiguous range.
pub(crate) fn buckets(
    ranges: impl Iterator<Item = Range<usize>>,
    limit: usize,
) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.end - last.start <= limit => last.end = r.end,
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::buckets;

    #[test]
    fn tensors_merge_into_buckets_up_to_the_limit() {
        let ranges = [0..3, 4..8, 8..20, 20..21];
        assert_eq!(
            buckets(ranges.iter().cloned(), 8),
            vec![0..8, 8..20, 20..21]
        );
        assert_eq!(buckets(ranges.iter().cloned(), 100), vec![0..21]);
        assert!(buckets(std::iter::empty(), 8).is_empty());
    }
}
