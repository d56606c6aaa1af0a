//! Data parallelism inside the step: the flat gradient is averaged over the ranks in buckets
//! (whole tensors, merged up to a bucket size), and the loss with it, so that clipping sees the
//! global norm and AdamW makes the same update on every rank.
//!
//! The backward reports each tensor's gradient as it completes ([`GradReducer::tensor_ready`]);
//! [`GradReducer::finish`] averages every bucket after the backward, or, with
//! [`GradReducer::overlapped`], a bucket whose tensors are all done is averaged at once on a
//! second stream forked into the step while the backward goes on, and `finish` joins it back
//! before clipping.

use kernel_runtime::{Buffer, Communicator, ReduceOp, Stream};
use kernels::optim::ParamLayout;
use std::ops::Range;

/// Gradients are reduced in buckets of about this many elements (4 MiB of f32): large enough
/// for NCCL's bandwidth, small enough that the first buckets overlap the rest of the backward.
pub const BUCKET_ELEMS: usize = 1 << 20;

/// A communicator and the buckets of the flat gradient it averages each step.
pub(crate) struct GradReducer {
    comm: Communicator,
    buckets: Vec<Range<usize>>,
    /// For each bucket, the tensors (by layout index) it covers.
    members: Vec<Vec<usize>>,
    /// The stream the overlapped buckets are averaged on.
    side: Option<Stream>,
    /// For each bucket, its tensors not yet reported this step.
    left: Vec<usize>,
}

impl GradReducer {
    pub fn new(comm: Communicator, layout: &ParamLayout) -> GradReducer {
        let tensors: Vec<(usize, Range<usize>)> = (0..layout.tensors())
            .filter_map(|i| layout.range(i).map(|r| (i, r)))
            .collect();
        let buckets = buckets(tensors.iter().map(|(_, r)| r.clone()), BUCKET_ELEMS);
        let members: Vec<Vec<usize>> = buckets
            .iter()
            .map(|b| {
                tensors
                    .iter()
                    .filter(|(_, r)| b.start <= r.start && r.end <= b.end)
                    .map(|(i, _)| *i)
                    .collect()
            })
            .collect();
        let left = members.iter().map(Vec::len).collect();
        GradReducer {
            comm,
            buckets,
            members,
            side: None,
            left,
        }
    }

    /// The same reducer, with the second stream that [`GradReducer::tensor_ready`] averages
    /// buckets on while the backward goes on.
    pub fn overlapped(mut self) -> Result<GradReducer, kernel_runtime::Error> {
        self.side = Some(self.comm.device().stream()?);
        Ok(self)
    }

    pub fn comm(&self) -> &Communicator {
        &self.comm
    }

    /// Notes that the gradient of layout tensor `tensor` is complete in `grads` (nothing on
    /// `stream` writes it again this step); a bucket whose tensors are all complete is averaged
    /// on the second stream from here on. Every rank reports tensors in the same order, so the
    /// ranks issue their collectives in the same order. Without [`GradReducer::overlapped`],
    /// buckets wait for [`GradReducer::finish`].
    pub fn tensor_ready(
        &mut self,
        stream: &Stream,
        grads: &mut Buffer<f32>,
        tensor: usize,
    ) -> Result<(), kernel_runtime::Error> {
        let Some(b) = self.members.iter().position(|m| m.contains(&tensor)) else {
            return Ok(());
        };
        self.left[b] = self.left[b].saturating_sub(1);
        if self.left[b] == 0 {
            if let Some(side) = &self.side {
                stream.fork(side)?;
                self.comm.all_reduce_range(
                    side,
                    grads,
                    self.buckets[b].clone(),
                    ReduceOp::Average,
                )?;
            }
        }
        Ok(())
    }

    /// Averages what [`GradReducer::tensor_ready`] has not (every bucket without a second
    /// stream) and the mean loss `loss[0]`, and makes `stream` wait for all of it; the next
    /// step starts counting afresh.
    pub fn finish(
        &mut self,
        stream: &Stream,
        grads: &mut Buffer<f32>,
        loss: &mut Buffer<f32>,
    ) -> Result<(), kernel_runtime::Error> {
        let on = self.side.as_ref().unwrap_or(stream);
        if let Some(side) = &self.side {
            stream.fork(side)?;
        }
        for (b, bucket) in self.buckets.iter().enumerate() {
            if self.side.is_none() || self.left[b] > 0 {
                self.comm
                    .all_reduce_range(on, grads, bucket.clone(), ReduceOp::Average)?;
            }
        }
        // Every shard has the same number of rows, so the mean of the means is the mean.
        self.comm
            .all_reduce_range(on, loss, 0..1, ReduceOp::Average)?;
        if let Some(side) = &self.side {
            stream.join(side)?;
        }
        for (left, m) in self.left.iter_mut().zip(&self.members) {
            *left = m.len();
        }
        Ok(())
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
