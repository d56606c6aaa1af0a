//! How the split pass divides a row among blocks, and the workspace the blocks exchange their
//! partials through.

use super::split_kernel::{SPLIT_HELD, SPLIT_THREADS};

/// The most blocks a row is split over: one lane of a warp each when the partials are folded.
const MAX_SLICES: u32 = 32;

/// Elements of an f32 chunk (16 bytes). The workspace is sized by f32's split: a bf16 row the
/// split pass takes (a multiple of 8 wide) splits into as many slices as an f32 row as wide.
const F32_WIDTH: u32 = 4;

/// Rows are split over `slices` blocks of `per` chunks each (the last may hold fewer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub slices: u32,
    pub per: u32,
}

impl Split {
    /// The split of a row of `chunks` chunks of `width` elements, each block holding up to
    /// what its threads' registers do; `None` where that takes more than [`MAX_SLICES`]
    /// blocks. Slices are balanced, so none is nearly empty.
    pub(crate) fn of(chunks: u32, width: u32) -> Option<Split> {
        let capacity = SPLIT_THREADS * (SPLIT_HELD / width);
        let slices = chunks.div_ceil(capacity).max(1);
        (slices <= MAX_SLICES).then(|| Split {
            slices,
            per: chunks.div_ceil(slices),
        })
    }

    /// The split of an f32 row of `cols` elements (what the workspace is sized by).
    pub(crate) fn of_f32(cols: usize) -> Option<Split> {
        u32::try_from(cols / F32_WIDTH as usize)
            .ok()
            .and_then(|chunks| Split::of(chunks, F32_WIDTH))
    }

    /// u32 words of workspace: the ticket counter, a counter per row, two words per slice.
    /// Saturates rather than overflow, so an impossible row count fails the length check.
    pub(crate) fn workspace_words(self, rows: usize) -> usize {
        rows.saturating_mul(1 + 2 * self.slices as usize)
            .saturating_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_balanced_and_bounded() {
        // 151936 f32: 37984 chunks, 2048 a block at most: 19 slices of 2000 (the last 1984).
        assert_eq!(
            Split::of_f32(151936),
            Some(Split {
                slices: 19,
                per: 2000
            })
        );
        assert_eq!(Split::of(1, 4), Some(Split { slices: 1, per: 1 }));
        assert_eq!(Split::of(2048, 4).unwrap().slices, 1);
        assert_eq!(Split::of(2049, 4).unwrap().slices, 2);
        assert_eq!(Split::of(32 * 2048, 4).unwrap().slices, 32);
        assert_eq!(Split::of(32 * 2048 + 1, 4), None);
        for chunks in [1, 100, 2047, 5000, 37984, 65535] {
            let s = Split::of(chunks, 4).unwrap();
            assert!(
                s.per <= 2048 && s.per * s.slices >= chunks,
                "{chunks}: {s:?}"
            );
            assert!(
                s.per * (s.slices - 1) < chunks,
                "{chunks}: an empty slice in {s:?}"
            );
        }
        assert_eq!(Split::of(5000, 4).unwrap().workspace_words(3), 1 + 3 * 7);
    }
}
