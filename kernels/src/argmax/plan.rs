//! How an arg-max launch splits its rows: decode has a handful of rows over a vocabulary, so
//! one CTA per row would leave most SMs idle; each row is cut into `splits` segments of
//! `seg` chunks, one CTA each, and the last CTA of a row to finish combines their partials.
//! The split depends only on the problem's shape, so the workspace size does too.

use crate::rowwise::Access;
use crate::FloatType;
use kernel_runtime::LaunchConfig;

/// Threads per arg-max CTA.
pub(crate) const ARGMAX_THREADS: u32 = 256;
/// CTAs a launch aims for: several per SM on any current GPU.
const TARGET_CTAS: u32 = 1024;
/// The fewest chunks a CTA is given (four per thread), so its fixed cost (a CTA reduction and
/// one partial written and read back) stays small next to its reads.
const MIN_CHUNKS_PER_CTA: u32 = 4 * ARGMAX_THREADS;

/// A split of `rows` rows of `nchunks` chunks each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// CTAs per row.
    pub splits: u32,
    /// Chunks per CTA (the last segment of a row may be shorter).
    pub seg: u32,
}

impl Split {
    pub(crate) fn new(rows: u32, nchunks: u32) -> Split {
        let wanted = TARGET_CTAS.div_ceil(rows.max(1));
        let most = nchunks.div_ceil(MIN_CHUNKS_PER_CTA);
        let splits = wanted.min(most).max(1);
        // At least one chunk a segment, so an empty row (which the op refuses) still splits.
        let seg = nchunks.div_ceil(splits).max(1);
        // Rounding the segment up can leave the last split empty; drop it.
        let splits = nchunks.div_ceil(seg).max(1);
        Split { splits, seg }
    }

    /// u32 words of workspace: one counter per row, then a (value, index) pair per segment.
    pub(crate) fn workspace_words(&self, rows: u32) -> usize {
        rows as usize * (1 + 2 * self.splits as usize)
    }

    /// One CTA per segment, the grid capped at what its x dimension holds (the kernel loops).
    pub(crate) fn launch(&self, rows: u32) -> LaunchConfig {
        let ctas = (rows as u64 * self.splits as u64).min(i32::MAX as u64) as u32;
        LaunchConfig::linear(ctas, ARGMAX_THREADS)
    }
}

/// Chunks per row and the access that reads them (16-byte vectors where every row starts
/// aligned).
pub(crate) fn access_for(storage: FloatType, cols: usize) -> (Access, u32) {
    let vector = Access::Vector.width(storage) as usize;
    let access = if cols.is_multiple_of(vector) {
        Access::Vector
    } else {
        Access::Scalar
    };
    (access, (cols / access.width(storage) as usize) as u32)
}

#[cfg(test)]
mod tests {
    use super::Split;

    #[test]
    fn every_chunk_is_in_exactly_one_nonempty_segment() {
        for rows in [1, 3, 64, 4096] {
            for nchunks in [1, 7, 1023, 1024, 1025, 37984, 151936] {
                let s = Split::new(rows, nchunks);
                assert!(s.splits >= 1 && s.seg >= 1);
                assert!(s.splits * s.seg >= nchunks, "{rows}×{nchunks}: {s:?}");
                assert!((s.splits - 1) * s.seg < nchunks, "{rows}×{nchunks}: {s:?}");
            }
        }
    }

    #[test]
    fn decode_rows_fill_the_gpu() {
        // 64 rows of a 151936-entry f32 vocabulary in 16-byte chunks.
        let s = Split::new(64, 37984);
        assert_eq!(s.splits, 16);
        assert_eq!(Split::new(4096, 37984).splits, 1);
    }
}
